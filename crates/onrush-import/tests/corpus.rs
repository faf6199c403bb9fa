//! Every `.jmx` of Apache JMeter's own source tree (shared/corpus/jmeter-jmx): none makes the
//! importer fail or panic, and every plan it writes loads with `onrush_plan::load_str`.
//!
//! Files the plans name (CSV feeders, uploads) are not in the corpus: the test creates each one
//! in a temporary folder beside the plan, a CSV with the header the importer expects, so that
//! loading checks the plan itself.

use std::path::{Path, PathBuf};

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/corpus/jmeter-jmx"
);

fn jmx_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the corpus folder is readable") {
        let path = entry.unwrap().path();
        if path.is_dir() {
            jmx_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "jmx") {
            out.push(path);
        }
    }
}

#[test]
fn every_corpus_plan_imports_and_loads() {
    let mut files = Vec::new();
    jmx_files(Path::new(CORPUS), &mut files);
    files.sort();
    assert_eq!(files.len(), 112, "the corpus has 112 .jmx files");
    let mut failures = Vec::new();
    let mut totals = [0usize; 3];
    for (i, file) in files.iter().enumerate() {
        let text = std::fs::read_to_string(file).unwrap();
        let options = onrush_import::Options {
            base_dir: file.parent().unwrap().to_path_buf(),
            source_name: file.display().to_string(),
            plan_dir: None,
            ..Default::default()
        };
        let import = match std::panic::catch_unwind(|| onrush_import::import_jmx(&text, &options)) {
            Ok(Ok(import)) => import,
            Ok(Err(e)) => {
                failures.push(format!("{}: import error {e}", file.display()));
                continue;
            }
            Err(_) => {
                failures.push(format!("{}: panicked", file.display()));
                continue;
            }
        };
        assert!(
            !import.report.entries.is_empty(),
            "{}: an empty report",
            file.display()
        );
        totals[0] += import.report.count(onrush_import::Status::Converted);
        totals[1] += import.report.count(onrush_import::Status::Approximated);
        totals[2] += import.report.count(onrush_import::Status::NotConverted);
        let dir = std::env::temp_dir().join(format!(
            "onrush-import-corpus-{}-{:?}-{i}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for data in &import.data_files {
            let path = dir.join(&data.default_path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).unwrap();
            }
            let content = if data.columns.is_empty() {
                "x\n".to_string()
            } else {
                format!(
                    "{}\n{}\n",
                    data.columns.join(","),
                    vec!["1"; data.columns.len()].join(",")
                )
            };
            std::fs::write(&path, content).unwrap();
        }
        // The converted scripts' module, which the plan's loader parses.
        if let Some(m) = &import.script {
            std::fs::write(dir.join(&m.file), &m.source).unwrap();
        }
        if let Err(e) = crate::load_plan(&import.yaml, &dir, &[]) {
            failures.push(format!(
                "{}: the plan does not load: {e}\n{}",
                file.display(),
                import.yaml
            ));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    eprintln!(
        "corpus: {} converted, {} approximated, {} not converted",
        totals[0], totals[1], totals[2]
    );
    assert!(
        failures.is_empty(),
        "{} of {} files failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

/// The same files with every disabled element enabled (more of each tree walked): no panic, no
/// error.
#[test]
fn every_corpus_plan_with_everything_enabled_imports() {
    let mut files = Vec::new();
    jmx_files(Path::new(CORPUS), &mut files);
    for file in &files {
        let text = std::fs::read_to_string(file)
            .unwrap()
            .replace("enabled=\"false\"", "enabled=\"true\"");
        let options = onrush_import::Options {
            base_dir: file.parent().unwrap().to_path_buf(),
            ..Default::default()
        };
        let result = std::panic::catch_unwind(|| onrush_import::import_jmx(&text, &options));
        match result {
            Ok(Ok(import)) => assert!(import.yaml.contains("scenarios:"), "{}", file.display()),
            Ok(Err(e)) => panic!("{}: {e}", file.display()),
            Err(_) => panic!("{}: panicked", file.display()),
        }
    }
}

/// The JSR223 and BeanShell elements of the corpus (docs/migrating.md, "JSR223 and BeanShell"
/// gives these numbers): which convert to JavaScript, which are empty (nothing to run), and
/// that every one left behind says why.
#[test]
fn corpus_script_elements_convert_or_say_why() {
    let mut files = Vec::new();
    jmx_files(Path::new(CORPUS), &mut files);
    let (mut converted, mut empty, mut left, mut disabled) = (0, 0, 0, 0);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        if !text.contains("JSR223") && !text.contains("BeanShell") {
            continue;
        }
        let options = onrush_import::Options {
            base_dir: file.parent().unwrap().to_path_buf(),
            ..Default::default()
        };
        let import = onrush_import::import_jmx(&text, &options).unwrap();
        for e in &import.report.entries {
            let class = e.testclass.as_str();
            if !(class.starts_with("JSR223") || class.starts_with("BeanShell"))
                || e.path.ends_with("(function)")
            {
                continue;
            }
            match e.status {
                _ if e.note.starts_with("disabled in the JMX") => disabled += 1,
                onrush_import::Status::Converted if e.note.contains("empty") => empty += 1,
                onrush_import::Status::Converted => {
                    assert!(e.note.contains(".js"), "{}: {}", file.display(), e.note);
                    converted += 1;
                }
                _ => {
                    assert!(
                        e.note.contains("does not convert: "),
                        "{}: {} {}",
                        file.display(),
                        e.path,
                        e.note
                    );
                    left += 1;
                }
            }
        }
    }
    assert_eq!(
        (converted, empty, left, disabled),
        (18, 269, 71, 0),
        "converted, empty, not converted, disabled"
    );
}
