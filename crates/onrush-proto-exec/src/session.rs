//! One virtual user's exec session: renders the command, spawns it in a process group of its
//! own, feeds stdin, captures stdout and stderr, waits for the exit — every wait a future of
//! the worker's runtime, so a VU waiting for a slow command never holds up the others.

use std::cell::Cell;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::Duration;

use onrush_plan::{ExecCommand, RenderContext};
use onrush_protocol::{
    failure_examples, Exchange, FailureClass, RequestStart, ResponseView, Session,
};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::capture::read_capped;
use crate::plan::ExecStep;

/// The name stderr is shown under (`extract: { e: { header: stderr } }`).
const STDERR: &[u8] = b"stderr";

/// One VU's buffers, reused from step to step.
#[derive(Default)]
pub struct ExecSession {
    /// The rendered program and arguments.
    argv: Vec<Vec<u8>>,
    /// The rendered environment values, in `env:` order.
    env: Vec<Vec<u8>>,
    stdin: Vec<u8>,
    /// The kept stdout (the body).
    stdout: Vec<u8>,
    /// `stderr` followed by the kept stderr: the head of a one-header response view.
    head: Vec<u8>,
    headers: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
    /// Stdout bytes in all, also past the limit.
    stdout_total: u64,
    /// The last exit status (128+N for a signal N).
    status: u16,
    label: Vec<u8>,
    unset: Option<usize>,
}

/// Kills a spawned command's process group when dropped while armed: on a timeout, and when
/// the run stops with the command still running (the VU's future is dropped), so that
/// neither the command nor what it started outlives its step.
struct GroupKiller {
    pgid: Option<i32>,
}

impl GroupKiller {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // SAFETY: kill(2) with a negative pid signals the process group we created
            // (`process_group(0)` made the child its leader); no memory is involved.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

impl ExecSession {
    /// Renders argv, env and stdin; `Err(slot)` names a variable without a value.
    fn render(&mut self, step: &ExecStep, ctx: &RenderContext<'_>) -> Result<(), usize> {
        let plan = &step.plan;
        match &plan.command {
            ExecCommand::Shell(line) => {
                self.argv.resize_with(3, Vec::new);
                for (out, fixed) in self.argv.iter_mut().zip([&b"sh"[..], b"-c"]) {
                    out.clear();
                    out.extend_from_slice(fixed);
                }
                self.argv[2].clear();
                line.render(ctx, &mut self.argv[2]).map_err(|u| u.slot)?;
            }
            ExecCommand::Argv(items) => {
                self.argv.resize_with(items.len(), Vec::new);
                for (out, template) in self.argv.iter_mut().zip(items) {
                    out.clear();
                    template.render(ctx, out).map_err(|u| u.slot)?;
                }
            }
        }
        self.env.resize_with(plan.env.len(), Vec::new);
        for (out, (_, template)) in self.env.iter_mut().zip(&plan.env) {
            out.clear();
            template.render(ctx, out).map_err(|u| u.slot)?;
        }
        self.stdin.clear();
        if let Some(t) = &plan.stdin {
            t.render(ctx, &mut self.stdin).map_err(|u| u.slot)?;
        }
        Ok(())
    }

    /// Runs the rendered command; its exit status (as a status code) or a failure class.
    async fn run(&mut self, step: &ExecStep, exchange: &mut Exchange) -> Result<u16, FailureClass> {
        let plan = &step.plan;
        let mut command = Command::new(OsStr::from_bytes(&self.argv[0]));
        command.args(self.argv[1..].iter().map(|a| OsStr::from_bytes(a)));
        for ((name, _), value) in plan.env.iter().zip(&self.env) {
            command.env(name, OsStr::from_bytes(value));
        }
        if let Some(dir) = &plan.cwd {
            command.current_dir(dir);
        }
        command
            .stdin(if plan.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so that a timeout kills what the command started too
            // (a shell's children, a tool's helpers).
            .process_group(0)
            // The zombie of a command dropped mid-run is reaped by tokio in the background.
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| {
            failure_examples::note(FailureClass::Io, || {
                format!(
                    "cannot run `{}`: {e}",
                    String::from_utf8_lossy(&self.argv[0])
                )
            });
            FailureClass::Io
        })?;
        let mut killer = GroupKiller {
            pgid: child.id().map(|id| id as i32),
        };
        exchange.record.bytes_out = self.stdin.len() as u64;
        let (stdin_pipe, stdout_pipe, stderr_pipe) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (out_total, err_total) = (Cell::new(0u64), Cell::new(0u64));
        let limit = plan.max_output;
        let (stdout, head, input) = (&mut self.stdout, &mut self.head, &self.stdin);
        let waited = tokio::time::timeout(step.timeout, async {
            let feed = async {
                if let Some(mut pipe) = stdin_pipe {
                    // A command that exits without reading its input is not a failure.
                    let _ = pipe.write_all(input).await;
                }
            };
            tokio::join!(
                feed,
                read_capped(stdout_pipe, stdout, limit, &out_total),
                read_capped(stderr_pipe, head, limit, &err_total),
            );
            child.wait().await
        })
        .await;
        self.stdout_total = out_total.get();
        exchange.record.bytes_in = out_total.get() + err_total.get();
        match waited {
            Err(_elapsed) => {
                killer.kill();
                // Reaped at once after SIGKILL; bounded all the same.
                let _ = tokio::time::timeout(Duration::from_secs(1), child.wait()).await;
                failure_examples::note(FailureClass::Timeout, || {
                    format!(
                        "`{}` ran longer than its timeout ({:?}): its process group was killed",
                        String::from_utf8_lossy(&step.label),
                        step.timeout
                    )
                });
                Err(FailureClass::Timeout)
            }
            Ok(Err(e)) => {
                failure_examples::note(FailureClass::Io, || {
                    format!(
                        "waiting for `{}` failed: {e}",
                        String::from_utf8_lossy(&step.label)
                    )
                });
                Err(FailureClass::Io)
            }
            Ok(Ok(status)) => {
                // Reaped: its pid may be reused, its group must not be signalled any more.
                killer.pgid = None;
                Ok(match (status.code(), status.signal()) {
                    (Some(code), _) => code as u16,
                    (None, Some(signal)) => 128 + signal as u16,
                    (None, None) => u16::MAX,
                })
            }
        }
    }
}

impl Session for ExecSession {
    type Step = ExecStep;

    async fn execute(
        &mut self,
        step: &ExecStep,
        ctx: &RenderContext<'_>,
        start: RequestStart,
    ) -> Exchange {
        let started = start.begin();
        let mut exchange = Exchange::empty();
        self.stdout.clear();
        self.stdout_total = 0;
        self.status = 0;
        self.head.clear();
        self.head.extend_from_slice(STDERR);
        self.label.clear();
        self.label.extend_from_slice(&step.label);
        if let Err(slot) = self.render(step, ctx) {
            self.unset = Some(slot);
            exchange.record.failure = Some(FailureClass::VariableUnset);
            exchange.finish(started, start.intended);
            return exchange;
        }
        // Boxed: spawning and reading a command is the largest future of any protocol, and
        // the engine's request future is as large as the largest (onrush-protocols' `Either`):
        // inline, it sized every idle VU of every protocol. One allocation beside a spawn.
        match Box::pin(self.run(step, &mut exchange)).await {
            Ok(status) => {
                self.status = status;
                exchange.record.status = status;
                exchange.responded = true;
                if !step.plan.expect_exit.contains(&i32::from(status)) {
                    exchange.record.failure = Some(FailureClass::UnexpectedStatus);
                    failure_examples::note(FailureClass::UnexpectedStatus, || {
                        let stderr = &self.head[STDERR.len()..];
                        format!(
                            "`{}` exited with {status} (expect_exit: {:?}); stderr: {:?}",
                            String::from_utf8_lossy(&step.label),
                            step.plan.expect_exit,
                            String::from_utf8_lossy(&stderr[..stderr.len().min(200)])
                        )
                    });
                }
            }
            Err(class) => exchange.record.failure = Some(class),
        }
        // The `stderr` header's value, without its final line break (as a header's value
        // would have none): `${err}` from `extract: { err: { header: stderr } }` fits a path.
        let mut end = self.head.len();
        while end > STDERR.len() && matches!(self.head[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        self.headers.clear();
        self.headers.push((0..STDERR.len(), STDERR.len()..end));
        exchange.finish(started, start.intended);
        exchange
    }

    fn response(&self) -> ResponseView<'_> {
        ResponseView {
            status: self.status,
            head: &self.head,
            headers: &self.headers,
            body: &self.stdout,
            body_size: self.stdout_total,
            body_hash: None,
            url: &self.label,
        }
    }

    fn take_unset(&mut self) -> Option<usize> {
        self.unset.take()
    }
}
