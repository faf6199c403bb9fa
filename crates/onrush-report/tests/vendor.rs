//! The vendored uPlot files are the ones whose sha256 vendor/README.md records.

use sha2::{Digest, Sha256};

#[test]
fn vendored_files_match_their_recorded_sha256() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("vendor");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let mut checked = 0;
    for line in readme.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let name = cells[1].split('`').nth(1).unwrap();
        let want = cells[2].trim_matches('`');
        let Ok(bytes) = std::fs::read(dir.join(name)) else {
            assert!(name.ends_with(".tgz"), "{name} is listed but missing");
            continue;
        };
        let got: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            got, want,
            "{name} differs from the copy recorded in vendor/README.md"
        );
        checked += 1;
    }
    assert_eq!(checked, 3);
}
