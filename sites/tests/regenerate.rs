//! `skillshift tasks generate` is reproducible: rendering the data files from
//! code gives the committed files byte for byte.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[test]
fn regeneration_reproduces_the_committed_data_files() {
    let data = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../data"));
    let rendered = skillshift_sites::generate::render().expect("render");
    assert!(rendered.files.len() >= 4);
    let mut stale = Vec::new();
    for file in &rendered.files {
        let path = data.join(&file.path);
        match std::fs::read_to_string(&path) {
            Ok(committed) if committed == file.content => {}
            Ok(_) => stale.push(format!("{} differs from what the generator writes", path.display())),
            Err(e) => stale.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(stale.is_empty(), "run `skillshift tasks generate`:\n{}", stale.join("\n"));
}

#[test]
fn rendering_twice_is_identical() {
    let a = skillshift_sites::generate::render().expect("render");
    let b = skillshift_sites::generate::render().expect("render");
    assert_eq!(a.files, b.files);
}
