//! Columns that reach into a record's arrays of objects: `iterations[].efficiency` is the
//! `efficiency` of every object of the record's `iterations` array, as one array, which the
//! table shows as one cell ("0.91 0.88 0.72"). A plain name is the field itself.

use serde_json::{Map, Value};

/// The column `name` of a record's fields: `None` if the record has no such field, or an
/// element of the array is not an object with that field (a renamed field must not show
/// as an empty cell).
pub(crate) fn lookup(fields: &Map<String, Value>, name: &str) -> Option<Value> {
    match name.split_once("[].") {
        None => fields.get(name).cloned(),
        Some((array, inner)) => match fields.get(array)? {
            Value::Array(items) => items
                .iter()
                .map(|item| item.as_object().and_then(|o| lookup(o, inner)))
                .collect::<Option<Vec<_>>>()
                .map(Value::Array),
            // A run that did not measure the array (null) shows as such.
            Value::Null => Some(Value::Null),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_path_collects_the_field_of_every_element() {
        let f = fields(json!({"seconds": 1.0, "iterations": [{"e": 0.5, "k": 1}, {"e": 0.25, "k": 2}]}));
        assert_eq!(lookup(&f, "seconds"), Some(json!(1.0)));
        assert_eq!(lookup(&f, "iterations[].e"), Some(json!([0.5, 0.25])));
        assert_eq!(lookup(&f, "iterations[].k"), Some(json!([1, 2])));
        assert_eq!(lookup(&f, "iterations"), Some(json!([{"e": 0.5, "k": 1}, {"e": 0.25, "k": 2}])));
    }

    #[test]
    fn a_missing_field_anywhere_is_none_and_a_null_array_is_null() {
        let f = fields(json!({"it": [{"e": 0.5}, {"x": 1}], "scalar": 3, "none": null}));
        assert_eq!(lookup(&f, "it[].e"), None, "the second element has no e");
        assert_eq!(lookup(&f, "scalar[].e"), None);
        assert_eq!(lookup(&f, "absent[].e"), None);
        assert_eq!(lookup(&f, "none[].e"), Some(Value::Null));
        assert_eq!(lookup(&fields(json!({"it": [[1]]})), "it[].e"), None);
    }
}
