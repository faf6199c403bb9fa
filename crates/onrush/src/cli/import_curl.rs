//! `onrush import curl [-o plan.yaml | --append plan.yaml [--scenario NAME]] 'curl …'`: a pasted
//! curl command into a plan, or into one more step of an existing plan (onrush-import's `curl`).
//! The command may be one argument (shell quoting understood; onrush's options may then follow
//! it), several arguments (after onrush's options), or `-` to read it from standard input.

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args;

use super::exit;

#[derive(Args)]
pub struct CurlArgs {
    /// Write the plan to FILE instead of standard output.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    out: Option<PathBuf>,
    /// Add the step to this plan's first scenario (or --scenario's), keeping the rest of the file.
    #[arg(long, value_name = "PLAN")]
    append: Option<PathBuf>,
    /// With --append: the scenario to add the step to.
    #[arg(long, value_name = "NAME", requires = "append")]
    scenario: Option<String>,
    /// The curl command: one quoted argument, its words, or `-` for standard input.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CURL"
    )]
    command: Vec<String>,
}

pub fn run(mut args: CurlArgs) -> i32 {
    // `onrush import curl 'curl …' -o plan.yaml`: options after a one-argument command.
    if args.command.len() > 1 && args.command[0].trim().contains(char::is_whitespace) {
        let rest = args.command.split_off(1);
        let mut it = rest.into_iter();
        while let Some(flag) = it.next() {
            let value = it.next();
            match (flag.as_str(), value) {
                ("-o" | "--out", Some(v)) => args.out = Some(v.into()),
                ("--append", Some(v)) => args.append = Some(v.into()),
                ("--scenario", Some(v)) => args.scenario = Some(v),
                (other, _) => {
                    eprintln!("error: {other:?} after the quoted curl command: expected -o FILE, --append PLAN or --scenario NAME");
                    return exit::USAGE;
                }
            }
        }
    }
    if args.command == ["-"] {
        let mut text = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut text) {
            eprintln!("error: cannot read the command from standard input: {e}");
            return exit::USAGE;
        }
        args.command = vec![text];
    }
    let import = match onrush_import::curl::import_curl(&args.command) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: curl command: {e}");
            return exit::USAGE;
        }
    };
    for w in &import.warnings {
        eprintln!("warning: {w}");
    }
    match &args.append {
        Some(plan) => append(plan, &import, args.scenario.as_deref()),
        None => {
            let source = args.command.join(" ");
            let source = source
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(100)
                .collect::<String>();
            let text = import.plan_yaml(&source);
            match &args.out {
                Some(path) => match std::fs::write(path, &text) {
                    Ok(()) => {
                        eprintln!("wrote {}", path.display());
                        exit::OK
                    }
                    Err(e) => {
                        eprintln!("error: cannot write {}: {e}", path.display());
                        exit::RUNTIME
                    }
                },
                None => {
                    print!("{text}");
                    exit::OK
                }
            }
        }
    }
}

/// The step goes in with its absolute URL (the plan's target may be another host); the new
/// text must load as a plan before it replaces the file.
fn append(plan: &Path, import: &onrush_import::curl::CurlImport, scenario: Option<&str>) -> i32 {
    let text = match std::fs::read_to_string(plan) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", plan.display());
            return exit::USAGE;
        }
    };
    let new = match onrush_import::curl::append(&text, &import.step_absolute, scenario) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {}: {e}", plan.display());
            return exit::USAGE;
        }
    };
    let base = match plan.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if let Err(e) = crate::linked::load_plan_str(&plan.display().to_string(), &new, &base, &[]) {
        eprintln!("error: the plan with the step appended does not load, left unchanged:\n{e}");
        return exit::USAGE;
    }
    if !import.http.is_empty() {
        eprintln!(
            "note: the command also asks for plan-wide http settings, not changed in {}:\n{}",
            plan.display(),
            onrush_import::yaml::write(&import.http)
        );
    }
    match std::fs::write(plan, new) {
        Ok(()) => {
            eprintln!("appended a step to {}", plan.display());
            exit::OK
        }
        Err(e) => {
            eprintln!("error: cannot write {}: {e}", plan.display());
            exit::RUNTIME
        }
    }
}
