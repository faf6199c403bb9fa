//! Prints the onrush plan of a JMX file on stdout and the report on stderr (what
//! `onrush import jmx FILE` does, without the CLI): `cargo run --example jmx2yaml FILE.jmx`.

fn main() {
    let path = std::env::args().nth(1).expect("usage: jmx2yaml FILE.jmx");
    let text = std::fs::read_to_string(&path).expect("a readable file");
    let options = onrush_import::Options {
        base_dir: std::path::Path::new(&path).parent().unwrap().into(),
        source_name: path.clone(),
        plan_dir: None,
        ..Default::default()
    };
    match onrush_import::import_jmx(&text, &options) {
        Ok(import) => {
            println!("{}", import.yaml);
            eprint!("{}", import.report.to_text());
        }
        Err(e) => eprintln!("error: {path}:{e}"),
    }
}
