//! `onrush kube render` against the Kubernetes API's own types: every object decodes strictly
//! into k8s.io/api (v0.37.2) and passes apimachinery's validation and the run's invariants
//! (tests/kube-validate in onrush-distributed, built by its install-kube-validate.sh), for
//! 1, 3 and 50 agents; the plan's files come back whole from the ConfigMaps' parts.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{onrush, temp_dir};

/// The validator, or `None` (skipped outside CI, a failure under CI=true).
fn validator() -> Option<PathBuf> {
    let tools = std::env::var_os("ONRUSH_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/onrush-tools")
        });
    let bin = tools.join("bin/kube-validate");
    if bin.exists() {
        return Some(bin);
    }
    let msg = format!(
        "{} is missing: run crates/onrush-distributed/tests/install-kube-validate.sh",
        bin.display()
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
    eprintln!("SKIPPED: {msg}");
    None
}

fn render(plan: &Path, agents: usize, extra: &[&str], out: &Path) -> String {
    let o = onrush()
        .args(["kube", "render", plan.to_str().unwrap(), "--agents"])
        .arg(agents.to_string())
        .args(["--image", "registry.example/onrush:0.1.0", "-o"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    stderr
}

fn validate(bin: &Path, yaml: &Path, mount: Option<&Path>) -> String {
    let mut cmd = Command::new(bin);
    if let Some(m) = mount {
        cmd.arg("--mount").arg(m);
    }
    let o = cmd.arg(yaml).output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{}: {stdout}{}",
        yaml.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

#[test]
fn kube_objects_decode_strictly_into_the_api_types_and_validate_for_1_3_and_50_agents() {
    let Some(bin) = validator() else { return };
    let d = temp_dir("kube-validate");
    std::fs::create_dir_all(d.join("data")).unwrap();
    // 2.5 MiB of feeder rows (more than one ConfigMap holds) and a binary body file.
    let rows: String = (0..100_000)
        .map(|i| format!("user{i:06},secret-{i:012}\n"))
        .collect();
    std::fs::write(d.join("data/users.csv"), format!("user,password\n{rows}")).unwrap();
    let body: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(d.join("data/body.bin"), &body).unwrap();
    let plan = d.join("Checkout Flow.yaml");
    std::fs::write(
        &plan,
        "target: http://shop.load.svc.cluster.local:8080\nscenarios:\n  - name: s\n    load: { vus: 5000, duration: 1m }\n    feeders: [{ file: data/users.csv, mode: unique }]\n    steps:\n      - post: /login\n        body_file: data/body.bin\n",
    )
    .unwrap();
    for agents in [1, 3, 50] {
        let out = d.join(format!("run-{agents}.yaml"));
        let stderr = render(&plan, agents, &[], &out);
        assert!(!stderr.contains("warning"), "{stderr}");
        let ok = validate(&bin, &out, None);
        assert!(ok.contains("2 Job") && ok.contains("1 Service"), "{ok}");
        // 2.9 MiB of files in parts of 512 KiB at most: 7 ConfigMaps.
        assert!(ok.contains("7 ConfigMap"), "{ok}");
    }
    // Every option at once: a namespace, scheduling, a results claim, required spreading, a
    // fixed run id, sizes given.
    let out = d.join("run-all.yaml");
    let stderr = render(
        &plan,
        3,
        &[
            "--namespace",
            "load",
            "--node-selector",
            "pool=load",
            "--node-selector",
            "topology.kubernetes.io/zone=eu-1a",
            "--toleration",
            "dedicated=load:NoSchedule",
            "--toleration",
            "spot",
            "--image-pull-secret",
            "regcred",
            "--anti-affinity",
            "required",
            "--results-pvc",
            "onrush-results",
            "--run-id",
            "nightly42",
            "--agent-threads",
            "4",
            "--agent-memory",
            "2Gi",
        ],
        &out,
    );
    assert!(
        stderr.contains("run nightly42: 3 agent pods of cpu 4, memory 2Gi"),
        "{stderr}"
    );
    let bundle = d.join("bundle");
    validate(&bin, &out, Some(&bundle));
    let yaml = std::fs::read_to_string(&out).unwrap();
    assert!(yaml.contains("\"name\": \"onrush-checkout-flow-nightly42-agents\""));
    // The init container's step, on what the kubelet would mount: the files come back whole.
    let plan_dir = d.join("plan");
    let o = onrush()
        .args(["kube", "unpack"])
        .arg(&bundle)
        .arg(&plan_dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read(plan_dir.join("data/users.csv")).unwrap(),
        std::fs::read(d.join("data/users.csv")).unwrap()
    );
    assert_eq!(std::fs::read(plan_dir.join("data/body.bin")).unwrap(), body);
    assert_eq!(
        std::fs::read(plan_dir.join("plan.yaml")).unwrap(),
        std::fs::read(&plan).unwrap()
    );
    // The memory derived from the preflight estimate: 5,000 VUs on 3 agents is 1,667 each,
    // 64 MiB + 1,667 × 32 KiB = 116.1 MiB; half as much again, rounded up to 64 MiB: 192 MiB,
    // under the floor of 256 MiB. On one agent: 220.3 MiB → 330.5 → 384 MiB.
    let stderr = render(&plan, 3, &[], &d.join("x.yaml"));
    assert!(
        stderr.contains("memory 256Mi each (preflight estimate for 1667 VUs"),
        "{stderr}"
    );
    let stderr = render(&plan, 1, &[], &d.join("y.yaml"));
    assert!(stderr.contains("memory 384Mi each"), "{stderr}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn kube_render_warns_when_the_plan_aims_at_loopback_or_the_builtin_server() {
    let d = temp_dir("kube-loopback");
    std::fs::create_dir_all(&d).unwrap();
    for (target, says) in [
        ("http://127.0.0.1:8080", "is loopback"),
        ("http://localhost:8080", "is loopback"),
        ("http://[::1]:8080", "is loopback"),
        ("builtin", "the built-in server"),
    ] {
        let plan = d.join("p.yaml");
        std::fs::write(
            &plan,
            format!("target: {target}\nscenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n      - get: /\n"),
        )
        .unwrap();
        let stderr = render(&plan, 2, &[], &d.join("run.yaml"));
        assert!(
            stderr.contains("warning: ") && stderr.contains(says),
            "{target}: {stderr}"
        );
        assert!(stderr.contains("svc.cluster.local"), "{stderr}");
    }
    // A bad toleration or run id is refused, naming the syntax.
    let plan = d.join("p.yaml");
    for (flag, value, says) in [
        ("--toleration", "a=b:Sometimes", "key[=value][:effect]"),
        ("--run-id", "Not_OK", "lower-case letters and digits"),
        ("--anti-affinity", "maybe", "preferred"),
    ] {
        let o = onrush()
            .args(["kube", "render", plan.to_str().unwrap(), "--agents", "1"])
            .args(["--image", "i", flag, value])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

fn tool(name: &str, install: &str) -> Option<PathBuf> {
    let tools = std::env::var_os("ONRUSH_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/onrush-tools")
        });
    let bin = tools.join("bin").join(name);
    if bin.exists() {
        return Some(bin);
    }
    let msg = format!("{} is missing: run {install}", bin.display());
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
    eprintln!("SKIPPED: {msg}");
    None
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// scripts/oci-image.py (what scripts/build-image.sh assembles the image with) on a tiny file
/// system: the tar holds a docker-archive manifest and an OCI layout whose digests, sizes and
/// diff id are right, crane (a reader onrush did not write) validates it, and two builds are
/// byte for byte the same. The release build and the run inside the image are the script's,
/// outside CI.
#[test]
fn the_image_assembler_writes_a_tar_that_docker_load_and_oci_tools_read() {
    let Some(crane) = tool("crane", "crates/onrush-distributed/tests/install-crane.sh") else {
        return;
    };
    let d = temp_dir("oci-image");
    let root = d.join("root");
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::create_dir_all(root.join("work")).unwrap();
    std::fs::write(root.join("onrush"), b"\x7fELF tiny").unwrap();
    std::fs::write(
        root.join("etc/passwd"),
        "onrush:x:65532:65532::/work:/nonexistent\n",
    )
    .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/oci-image.py");
    let build = |out: &Path| {
        let o = Command::new("python3")
            .arg(&script)
            .arg("--rootfs")
            .arg(&root)
            .args(["--tag", "onrush:0.1.0", "--entrypoint", "/onrush"])
            .args([
                "--user",
                "65532:65532",
                "--own",
                "/work=65532:65532",
                "--out",
            ])
            .arg(out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let tar = d.join("image.tar");
    build(&tar);
    build(&d.join("again.tar"));
    assert_eq!(
        std::fs::read(&tar).unwrap(),
        std::fs::read(d.join("again.tar")).unwrap(),
        "not reproducible"
    );
    let x = d.join("x");
    std::fs::create_dir_all(&x).unwrap();
    assert!(Command::new("tar")
        .arg("-xf")
        .arg(&tar)
        .arg("-C")
        .arg(&x)
        .status()
        .unwrap()
        .success());
    let json = |p: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(x.join(p)).unwrap()).unwrap()
    };
    let blob = |digest: &str| -> Vec<u8> {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        let bytes = std::fs::read(x.join("blobs/sha256").join(hex)).unwrap();
        assert_eq!(sha256_hex(&bytes), hex, "blob {hex}");
        bytes
    };
    // The OCI side: index → manifest → config and layer, each digest and size right.
    let index = json("index.json");
    let m = &index["manifests"][0];
    assert_eq!(m["annotations"]["io.containerd.image.name"], "onrush:0.1.0");
    let manifest: serde_json::Value =
        serde_json::from_slice(&blob(m["digest"].as_str().unwrap())).unwrap();
    let config_bytes = blob(manifest["config"]["digest"].as_str().unwrap());
    assert_eq!(manifest["config"]["size"], config_bytes.len());
    let layer = blob(manifest["layers"][0]["digest"].as_str().unwrap());
    assert_eq!(manifest["layers"][0]["size"], layer.len());
    let config: serde_json::Value = serde_json::from_slice(&config_bytes).unwrap();
    assert_eq!(
        config["rootfs"]["diff_ids"][0],
        format!("sha256:{}", sha256_hex(&layer))
    );
    assert_eq!(config["config"]["User"], "65532:65532");
    assert_eq!(config["config"]["Entrypoint"][0], "/onrush");
    // The docker-archive side points at the same blobs.
    let docker = json("manifest.json");
    assert_eq!(docker[0]["RepoTags"][0], "onrush:0.1.0");
    assert_eq!(
        docker[0]["Config"],
        format!(
            "blobs/sha256/{}",
            manifest["config"]["digest"]
                .as_str()
                .unwrap()
                .trim_start_matches("sha256:")
        )
    );
    // The layer: the files, /work owned by the image's user, nothing owned by the builder.
    let listing = Command::new("tar")
        .arg("-tvf")
        .arg(x.join(docker[0]["Layers"][0].as_str().unwrap()))
        .arg("--numeric-owner")
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout);
    assert!(
        listing.contains("65532/65532") && listing.contains(" work"),
        "{listing}"
    );
    assert!(
        listing.contains("0/0") && listing.contains(" onrush\n"),
        "{listing}"
    );
    let v = Command::new(&crane)
        .args(["validate", "--tarball"])
        .arg(&tar)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&v.stdout);
    assert!(
        v.status.success() && said.contains("PASS"),
        "{said}{}",
        String::from_utf8_lossy(&v.stderr)
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The pods' own commands, run on this host with the pod's paths mapped onto folders: the init
/// container's `kube unpack` on the mounted ConfigMap parts (a feeder larger than a
/// ConfigMap), then the controller's and two agents' arguments exactly as rendered. The run
/// reaches the plan's count to the request. What only a cluster does (the Service's DNS name,
/// the kubelet's mounts, the image) is not exercised here.
#[test]
fn the_rendered_pods_commands_run_the_plan_to_its_exact_count() {
    use onrush_distributed::kube::{self, KubeOptions, KubeTls, PlanFiles, Resources, Scheduling};
    let server = crate::common::Server::start();
    let d = temp_dir("kube-pods");
    std::fs::create_dir_all(d.join("p/data")).unwrap();
    let rows: String = (0..150_000).map(|i| format!("u{i:07}\n")).collect();
    std::fs::write(d.join("p/data/users.csv"), format!("user\n{rows}")).unwrap();
    let plan = d.join("p/plan.yaml");
    std::fs::write(
        &plan,
        format!("target: {}\nscenarios:\n  - name: s\n    load: {{ vus: 4, iterations: 30 }}\n    feeders: [{{ file: data/users.csv, mode: unique }}]\n    steps:\n      - get: /?u=${{user}}\n", server.url("")),
    )
    .unwrap();
    let files = PlanFiles::read(&plan, &[d.join("p/data/users.csv")]).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let objects = kube::manifests(
        &KubeOptions {
            name: "plan",
            run_id: "t1",
            agents: 2,
            image: "unused",
            namespace: None,
            agent_threads: Some(1),
            agent_resources: Resources::guaranteed("1", "256Mi"),
            controller_resources: Resources::controller(),
            scheduling: Scheduling::default(),
            results_pvc: None,
            token: "0123456789abcdef0123456789abcdef",
            web_token: "fedcba9876543210fedcba9876543210",
            port,
            tls: KubeTls::default(),
        },
        &files,
    );
    // What the kubelet mounts: every key of every ConfigMap, a file of the bundle folder.
    let bundle = d.join("bundle");
    std::fs::create_dir_all(&bundle).unwrap();
    let mut config_maps = 0;
    for cm in objects.iter().filter(|o| o["kind"] == "ConfigMap") {
        config_maps += 1;
        for (k, v) in cm["data"].as_object().unwrap() {
            std::fs::write(bundle.join(k), v.as_str().unwrap()).unwrap();
        }
        assert!(cm.get("binaryData").is_none());
    }
    assert!(config_maps >= 3, "{config_maps} ConfigMaps for 1.2 MiB");
    std::fs::create_dir_all(d.join("token-dir")).unwrap();
    std::fs::write(
        d.join("token-dir/token"),
        objects[0]["stringData"]["token"].as_str().unwrap(),
    )
    .unwrap();
    let job = |component: &str| {
        objects
            .iter()
            .find(|o| {
                o["kind"] == "Job"
                    && o["metadata"]["labels"]["app.kubernetes.io/component"] == component
            })
            .unwrap()["spec"]["template"]["spec"]
            .clone()
    };
    let controller = job("controller");
    let unpack: Vec<String> =
        serde_json::from_value(controller["initContainers"][0]["args"].clone()).unwrap();
    // The pod's paths, on this host.
    let local = |a: &str, index: usize| -> String {
        let a = a
            .replace("0.0.0.0:", "127.0.0.1:")
            .replace("onrush-plan-t1-controller:", "127.0.0.1:")
            .replace("$(AGENT_INDEX)", &index.to_string());
        let work = format!("/work-{index}");
        for (pod, here) in [
            ("/bundle", "/bundle"),
            ("/plan", "/plan"),
            ("/token", "/token-dir"),
            ("/results", "/results"),
            ("/work", work.as_str()),
        ] {
            if let Some(rest) = a.strip_prefix(pod) {
                return format!("{}{here}{rest}", d.display());
            }
        }
        a
    };
    let args = |spec: &serde_json::Value, index: usize| -> Vec<String> {
        let raw: Vec<String> =
            serde_json::from_value(spec["containers"][0]["args"].clone()).unwrap();
        // The live page's and /metrics' fixed ports: any free one here, and no linger.
        raw.iter()
            .map(|a| {
                local(a, index)
                    .replace(":5665", ":0")
                    .replace(":9464", ":0")
                    .replace("2m", "0s")
            })
            .collect()
    };
    let web_token = objects[0]["stringData"]["web-token"].as_str().unwrap();
    assert_eq!(
        controller["containers"][0]["env"][0]["name"], "ONRUSH_WEB_TOKEN",
        "the controller reads the page's token from the Secret"
    );
    let o = onrush()
        .args(unpack.iter().map(|a| local(a, 0)))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut c = onrush()
        .args(args(&controller, 0))
        .env("ONRUSH_WEB_TOKEN", web_token)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let agents: Vec<_> = (0..2)
        .map(|i| {
            onrush()
                .args(args(&job("agent"), i))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    // Bounded: the controller ends the run; past 120 s it is killed (by its own PID).
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = c.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(120) {
            let _ = c.kill();
            break c.wait().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    // The agents end with the run; ones left waiting (a failed controller) are stopped.
    for mut a in agents {
        if !status.success() {
            let _ = a.kill();
        }
        let _ = a.wait();
    }
    let mut stderr = String::new();
    std::io::Read::read_to_string(c.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("/#token={web_token}")),
        "the controller served its live page with the Secret's token: {stderr}"
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("results/run/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["totals"]["requests"], 120, "{stderr}");
    assert_eq!(server.stats().requests, 120);
    let _ = std::fs::remove_dir_all(&d);
}
