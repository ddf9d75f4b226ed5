//! placeholder
/// placeholder
#[derive(clap::Parser, Debug)]
pub struct Args {}
/// placeholder
pub fn run(_: &Args) -> anyhow::Result<()> {
    Ok(())
}
