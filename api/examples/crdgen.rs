//! Writes every CRD to `config/crd/` (run from anywhere in the repository).

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/crd");
    std::fs::create_dir_all(&dir)?;
    for (name, body) in netrollout_api::crds::files()? {
        std::fs::write(dir.join(&name), body)?;
        println!("wrote config/crd/{name}");
    }
    Ok(())
}
