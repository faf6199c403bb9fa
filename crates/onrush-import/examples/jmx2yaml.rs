fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let o = onrush_import::Options {
        base_dir: std::path::Path::new(&path).parent().unwrap().into(),
        source_name: path.clone(),
    };
    let i = onrush_import::import_jmx(&text, &o).unwrap();
    println!("{}", i.yaml);
    eprintln!("{}", i.report.to_text());
}
