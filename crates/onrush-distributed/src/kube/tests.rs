use super::*;

fn options() -> KubeOptions<'static> {
    KubeOptions {
        name: "checkout",
        run_id: "0a1b2c3d",
        agents: 3,
        image: "registry.example/onrush:0.1.0",
        namespace: Some("load"),
        agent_threads: Some(2),
        agent_resources: Resources::guaranteed("2", "1Gi"),
        controller_resources: Resources::controller(),
        scheduling: Scheduling::default(),
        results_pvc: None,
        token: "0123456789abcdef0123456789abcdef",
        web_token: "fedcba9876543210fedcba9876543210",
        port: 7878,
        tls: KubeTls::default(),
    }
}

fn one_file() -> PlanFiles {
    PlanFiles {
        entries: vec![("plan.yaml".into(), b"a: 1\n".to_vec())],
    }
}

fn by_kind<'a>(objs: &'a [Value], kind: &str, component: &str) -> &'a Value {
    objs.iter()
        .find(|o| {
            o["kind"] == kind && o["metadata"]["labels"]["app.kubernetes.io/component"] == component
        })
        .unwrap_or_else(|| panic!("no {kind} {component}"))
}

fn pod<'a>(objs: &'a [Value], component: &str) -> &'a Value {
    &by_kind(objs, "Job", component)["spec"]["template"]["spec"]
}

fn args(spec: &Value) -> Vec<String> {
    spec["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn tls_files_go_into_the_secret_and_each_pod_mounts_only_its_own() {
    let o = KubeOptions {
        tls: KubeTls {
            controller: Some(("CTL CERT".into(), "CTL KEY".into())),
            client_ca: Some("CLIENT CA".into()),
            agent_ca: Some("AGENT CA".into()),
            agent_server_name: Some("controller.load.svc".into()),
            agent: Some(("AGENT CERT".into(), "AGENT KEY".into())),
        },
        ..options()
    };
    let objs = manifests(&o, &one_file());
    let data = &objs[0]["stringData"];
    assert_eq!(data["controller.key"], "CTL KEY");
    assert_eq!(data["client-ca.pem"], "CLIENT CA");
    assert_eq!(data["agent.key"], "AGENT KEY");
    let mounted = |spec: &Value| -> Vec<String> {
        let volumes = spec["volumes"].as_array().unwrap();
        let token = volumes.iter().find(|v| v["name"] == "token").unwrap();
        token["secret"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["key"].as_str().unwrap().to_string())
            .collect()
    };
    let (controller, agents) = (pod(&objs, "controller"), pod(&objs, "agent"));
    assert_eq!(
        mounted(controller),
        ["token", "controller.pem", "controller.key", "client-ca.pem"]
    );
    assert_eq!(
        mounted(agents),
        ["token", "agent-ca.pem", "agent.pem", "agent.key"]
    );
    let c = args(controller).join(" ");
    assert!(
        c.ends_with(
            "--tls-cert /token/controller.pem --tls-key /token/controller.key \
             --tls-client-ca /token/client-ca.pem"
        ),
        "{c}"
    );
    let a = args(agents).join(" ");
    assert!(
        a.ends_with(
            "--tls-ca /token/agent-ca.pem --tls-cert /token/agent.pem --tls-key \
             /token/agent.key --tls-server-name controller.load.svc"
        ),
        "{a}"
    );
    // Without TLS files, each pod mounts the token only.
    let plain = manifests(&options(), &one_file());
    assert_eq!(mounted(pod(&plain, "controller")), ["token"]);
    assert!(!args(pod(&plain, "agent"))
        .iter()
        .any(|a| a.starts_with("--tls")));
}

#[test]
fn the_objects_hold_what_a_distributed_run_needs() {
    let files = PlanFiles {
        entries: vec![
            ("plan.yaml".into(), b"target: http://x\n".to_vec()),
            ("data/users.csv".into(), b"user\na\n".to_vec()),
            ("body.bin".into(), vec![0xff, 0, 1]),
        ],
    };
    let objs = manifests(&options(), &files);
    let kinds: Vec<&str> = objs.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["Secret", "ConfigMap", "Service", "Job", "Job"]);
    for o in &objs {
        assert_eq!(o["metadata"]["namespace"], "load");
        let name = o["metadata"]["name"].as_str().unwrap();
        assert!(name.starts_with("onrush-checkout-0a1b2c3d-"), "{name}");
        let labels = &o["metadata"]["labels"];
        assert_eq!(labels["onrush/run-id"], "0a1b2c3d");
        assert_eq!(labels["app.kubernetes.io/name"], "onrush");
        assert_eq!(labels["app.kubernetes.io/instance"], "checkout-0a1b2c3d");
    }
    assert_eq!(objs[0]["stringData"]["token"], options().token);
    assert_eq!(objs[1]["data"]["f1.0"], "user\na\n");
    assert_eq!(objs[1]["binaryData"]["f2.0"], "/wAB");
    let index: Vec<files::IndexEntry> =
        serde_json::from_str(objs[1]["data"]["index.json"].as_str().unwrap()).unwrap();
    assert_eq!(index[1].path, "data/users.csv");
    assert_eq!(index[1].parts, ["f1.0"]);
    // The Service selects this run's controller pod only, on the port the agents dial.
    let selector = objs[2]["spec"]["selector"].as_object().unwrap();
    let controller_labels =
        &by_kind(&objs, "Job", "controller")["spec"]["template"]["metadata"]["labels"];
    for (k, v) in selector {
        assert_eq!(&controller_labels[k], v, "{k}");
    }
    assert_eq!(selector["onrush/run-id"], "0a1b2c3d");
    // The live page and /metrics behind the Service; the page's token from the Secret.
    let ports: Vec<(&str, u64)> = objs[2]["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["port"].as_u64().unwrap()))
        .collect();
    assert_eq!(ports, [("control", 7878), ("web", 5665), ("metrics", 9464)]);
    let controller = pod(&objs, "controller");
    let cargs = args(controller);
    assert!(
        cargs.windows(2).any(|w| w == ["--web", "0.0.0.0:5665"]),
        "{cargs:?}"
    );
    assert!(
        cargs
            .windows(2)
            .any(|w| w == ["--metrics-addr", "0.0.0.0:9464"]),
        "{cargs:?}"
    );
    assert_eq!(
        controller["containers"][0]["env"][0]["valueFrom"]["secretKeyRef"]["key"],
        "web-token"
    );
    assert_eq!(
        objs[0]["stringData"]["web-token"],
        "fedcba9876543210fedcba9876543210"
    );
    let agents = &by_kind(&objs, "Job", "agent")["spec"];
    assert_eq!(agents["completionMode"], "Indexed");
    assert_eq!(agents["completions"], 3);
    assert_eq!(
        args(pod(&objs, "agent"))[2],
        "onrush-checkout-0a1b2c3d-controller:7878"
    );
    let controller = pod(&objs, "controller");
    assert_eq!(args(controller)[3], "3");
    // The plan's files are put back under /plan by the init container before the controller.
    assert_eq!(
        controller["initContainers"][0]["args"],
        json!(["kube", "unpack", "/bundle", "/plan"])
    );
    assert_eq!(
        controller["volumes"][0]["projected"]["sources"][0]["configMap"]["name"],
        "onrush-checkout-0a1b2c3d-plan-0"
    );
}

#[test]
fn pods_carry_resources_scheduling_and_a_non_root_user() {
    let o = KubeOptions {
        scheduling: Scheduling {
            node_selector: vec![("pool".into(), "load".into())],
            tolerations: vec![
                "dedicated=load:NoSchedule".parse().unwrap(),
                "spot".parse().unwrap(),
            ],
            image_pull_secrets: vec!["regcred".into()],
            anti_affinity: AntiAffinity::Preferred,
        },
        ..options()
    };
    let objs = manifests(&o, &one_file());
    for component in ["controller", "agent"] {
        let p = pod(&objs, component);
        assert_eq!(p["nodeSelector"], json!({ "pool": "load" }));
        assert_eq!(
            p["tolerations"],
            json!([{ "key": "dedicated", "operator": "Equal", "value": "load", "effect": "NoSchedule" },
                   { "key": "spot", "operator": "Exists" }])
        );
        assert_eq!(p["imagePullSecrets"], json!([{ "name": "regcred" }]));
        assert_eq!(p["securityContext"]["runAsUser"], RUN_AS);
        assert_eq!(p["containers"][0]["securityContext"]["runAsNonRoot"], true);
    }
    let agent = pod(&objs, "agent");
    assert_eq!(
        agent["containers"][0]["resources"],
        json!({ "requests": { "cpu": "2", "memory": "1Gi" }, "limits": { "cpu": "2", "memory": "1Gi" } })
    );
    let preferred =
        &agent["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(preferred["weight"], 100);
    assert_eq!(
        preferred["podAffinityTerm"]["labelSelector"]["matchLabels"]["onrush/run-id"],
        "0a1b2c3d"
    );
    assert!(pod(&objs, "controller").get("affinity").is_none());
    let required = KubeOptions {
        scheduling: Scheduling {
            anti_affinity: AntiAffinity::Required,
            ..Scheduling::default()
        },
        ..options()
    };
    let objs = manifests(&required, &one_file());
    let agent = pod(&objs, "agent");
    assert_eq!(
        agent["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
            ["topologyKey"],
        "kubernetes.io/hostname"
    );
    // Without scheduling options, none of the fields is written (not even empty).
    assert!(agent.get("nodeSelector").is_none() && agent.get("tolerations").is_none());
}

#[test]
fn tolerations_and_anti_affinity_parse_and_bad_ones_say_the_syntax() {
    assert_eq!(
        "gpu:NoExecute".parse::<Toleration>().unwrap(),
        Toleration {
            key: "gpu".into(),
            value: None,
            effect: Some("NoExecute".into())
        }
    );
    let e = "gpu=a:Never".parse::<Toleration>().unwrap_err();
    assert!(e.contains("NoSchedule, PreferNoSchedule, NoExecute"), "{e}");
    assert!(e.contains("key[=value][:effect]"), "{e}");
    assert!("=a".parse::<Toleration>().unwrap_err().contains("no key"));
    assert!("sometimes"
        .parse::<AntiAffinity>()
        .unwrap_err()
        .contains("preferred"));
}

#[test]
fn agent_memory_is_the_estimate_with_room_rounded_up() {
    assert_eq!(agent_memory(0), "256Mi");
    // 64 MiB base + 10,000 VUs at 32 KiB = 376.5 MiB; ×1.5 = 564.8 MiB → 576 MiB.
    assert_eq!(agent_memory((64 << 20) + 10_000 * 32 * 1024), "576Mi");
}

#[test]
fn two_renders_share_no_name() {
    let a = manifests(&options(), &one_file());
    let b = manifests(
        &KubeOptions {
            run_id: "ffff0000",
            ..options()
        },
        &one_file(),
    );
    for (x, y) in a.iter().zip(&b) {
        assert_ne!(x["metadata"]["name"], y["metadata"]["name"]);
    }
}

#[test]
fn the_yaml_is_the_objects() {
    let files = PlanFiles {
        entries: vec![("plan.yaml".into(), b"a: \"q\"\n".to_vec())],
    };
    let yaml = to_yaml(&manifests(&options(), &files));
    assert_eq!(yaml.lines().filter(|l| *l == "---").count(), 5, "{yaml}");
    assert!(yaml.contains("\"kind\": \"Job\""));
    assert!(yaml.contains("\"f0.0\": \"a: \\\"q\\\"\\n\""), "{yaml}");
    assert!(yaml.contains("\"volumes\":\n"), "{yaml}");
}
