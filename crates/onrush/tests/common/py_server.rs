//! A witness server onrush did not write, run by python3 from `tests/servers/`: it prints its
//! port on its first line, serves until its stdin closes, then prints its own counts as one
//! line of JSON. The protocols' tests wrap it with the script and arguments of their server.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

pub struct PyServer {
    child: Child,
    pub port: u16,
}

impl PyServer {
    /// Starts `command` (python3 and its script, arguments and environment set) and reads
    /// the port it prints; `what` names it in a failure.
    pub fn spawn(mut command: Command, what: &str) -> PyServer {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("python3 runs the {what}: {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the {what} prints its port, not {line:?}"));
        PyServer { child, port }
    }

    /// `python3 tests/servers/SCRIPT`.
    pub fn command(script: &str) -> Command {
        let mut command = Command::new("python3");
        command.arg(format!(
            "{}/tests/servers/{script}",
            env!("CARGO_MANIFEST_DIR")
        ));
        command
    }

    /// Stops the server (closes its stdin) and returns the counts it printed.
    pub fn finish(mut self) -> Value {
        drop(self.child.stdin.take());
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let _ = self.child.wait();
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out:?}"))
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}
