//! Plan profiles end to end: `onrush run -P` changes what the built-in server receives;
//! `validate -P --print` shows the merged plan; a wrong name is refused with a guess.

use crate::common;
use common::*;

const PLAN: &str = r#"# requests: ${n} iterations of one GET
target: http://127.0.0.1:{port}
vars: { n: 2 }
profiles:
  heavy:
    vars: { n: 5 }
  twice:
    load: { vus: 2, iterations: "${n}" }
scenarios:
  - name: s
    load: { vus: 1, iterations: "${n}" }
    steps: [{ get: /bytes/1 }]
"#;

#[test]
fn profiles_change_what_the_server_receives() {
    let server = Server::start();
    let dir = temp_dir("profiles");
    let plan = write_plan(&dir, &PLAN.replace("{port}", &server.port().to_string()));
    let plan = plan.to_str().unwrap();
    let mut sent = 0;
    for (args, expected) in [
        (vec![], 2),
        (vec!["-P", "heavy"], 5),
        (vec!["-P", "heavy,twice"], 10),
        (vec!["-P", "heavy", "-P", "twice", "-D", "n=3"], 6),
    ] {
        let mut all = vec!["run", plan];
        all.extend(args.iter().copied());
        run_expect(0, &all, &dir.join(format!("out{expected}")));
        let now = server.stats().requests;
        assert_eq!(now - sent, expected, "{args:?}");
        sent = now;
    }
    let printed = onrush()
        .args(["validate", plan, "-P", "heavy,twice", "--print"])
        .output()
        .unwrap();
    assert_eq!(printed.status.code(), Some(0), "{}", text(&printed));
    let yaml = String::from_utf8_lossy(&printed.stdout);
    assert!(
        yaml.contains("n: 5") && yaml.contains("vus: 2") && !yaml.contains("profiles"),
        "{yaml}"
    );
    let wrong = onrush()
        .args(["run", plan, "-P", "haevy"])
        .output()
        .unwrap();
    assert_eq!(wrong.status.code(), Some(2), "{}", text(&wrong));
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        err.contains("unknown profile \"haevy\"; the plan defines: heavy, twice")
            && err.contains("did you mean -P heavy?"),
        "{err}"
    );
    assert_eq!(
        server.stats().requests,
        sent,
        "nothing sent by a refused run"
    );
}
