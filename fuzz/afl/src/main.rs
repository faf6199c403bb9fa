//! One AFL++ binary for every target: `ONRUSH_FUZZ_TARGET` names the target (see
//! `onrush-fuzz --list`); AFL feeds each input in persistent mode.

fn main() {
    let name = std::env::var("ONRUSH_FUZZ_TARGET").unwrap_or_else(|_| {
        eprintln!("set ONRUSH_FUZZ_TARGET to a target name (onrush-fuzz --list)");
        std::process::exit(2)
    });
    let Some(target) = onrush_fuzz::target(&name) else {
        eprintln!("no fuzz target {name:?}");
        std::process::exit(2)
    };
    afl::fuzz!(|data: &[u8]| {
        if data.len() <= target.max_len {
            (target.run)(data);
        }
    });
}
