//! What can be checked of `deploy/` without a container engine or a cluster: every
//! YAML file parses; every configuration the files give a broker or a name server
//! (`.conf` files, ConfigMaps, `-o` options in commands) is accepted by the real
//! binaries, which print their effective settings with `-p` and fail on an unknown key
//! or a bad value; and names, addresses and ports agree across the files: each slave
//! has a master of its brokerName, brokers point at the name servers that exist, and
//! every port a broker listens on (listenPort, its fast port listenPort - 2,
//! haListenPort) is exposed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use vostok_remoting::support::properties;
use vostok_tests::binary;
use yaml_rust2::{Yaml, YamlLoader};

type Config = BTreeMap<String, String>;

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Files under `dir` (recursively) whose name ends with `suffix`.
fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            out.extend(files(&path, suffix));
        } else if path.to_string_lossy().ends_with(suffix) {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn yaml(path: &Path) -> Vec<Yaml> {
    YamlLoader::load_from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A scalar as text (ports are numbers in some places, strings in others).
fn text(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        _ => None,
    }
}

fn strings(y: &Yaml) -> Vec<String> {
    y.as_vec().into_iter().flatten().filter_map(text).collect()
}

/// The settings `mqnamesrv` (`namesrv`) or `mqbroker` runs with for config file text
/// `conf` and `-o` options, as it prints them with `-p`; panics naming `what` if the
/// binary refuses them.
fn effective(what: &str, namesrv: bool, conf: &str, options: &[String]) -> Config {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("checked.conf");
    std::fs::write(&path, conf).expect("config file");
    let program = if namesrv {
        "vostok-test-namesrv"
    } else {
        "vostok-test-broker"
    };
    let mut command = Command::new(binary(program));
    command.arg("-c").arg(&path).arg("-p");
    if namesrv {
        // mqnamesrv only warns about an unknown key in its file; --set refuses one.
        for (k, v) in properties::parse(conf) {
            command.args(["--set", &format!("{k}={v}")]);
        }
    }
    for option in options {
        command.args(["-o", option]);
    }
    let output = command.output().expect("run the binary");
    assert!(
        output.status.success(),
        "{what}: {program} refuses the configuration: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    properties::parse(&String::from_utf8_lossy(&output.stdout))
        .into_iter()
        .collect()
}

fn port(config: &Config, key: &str) -> u16 {
    config[key].parse().expect("a port")
}

/// The ports a broker listens on: listenPort, haListenPort and the fast port.
fn broker_ports(config: &Config) -> BTreeSet<u16> {
    let listen = port(config, "listenPort");
    let mut ports = BTreeSet::from([listen, port(config, "haListenPort")]);
    if config["fastListenEnable"] == "true" {
        ports.insert(listen - 2);
    }
    ports
}

/// A set of brokers: one master and at least one slave per brokerName, in one cluster,
/// registering with exactly `namesrvs`; and, when given, each exposing its ports.
fn check_brokers(
    what: &str,
    brokers: &BTreeMap<String, (Config, Option<BTreeSet<u16>>)>,
    namesrvs: &BTreeSet<String>,
) {
    let mut groups: BTreeMap<&str, Vec<(&str, &Config)>> = BTreeMap::new();
    for (name, (config, exposed)) in brokers {
        groups
            .entry(&config["brokerName"])
            .or_default()
            .push((name, config));
        let registers: BTreeSet<String> = config["namesrvAddr"]
            .split(';')
            .map(|s| s.trim().to_owned())
            .collect();
        assert_eq!(&registers, namesrvs, "{what}: {name}'s namesrvAddr");
        if let Some(exposed) = exposed {
            let missing: Vec<_> = broker_ports(config).difference(exposed).copied().collect();
            assert!(
                missing.is_empty(),
                "{what}: {name} does not expose {missing:?}"
            );
        }
    }
    assert_eq!(groups.len(), 2, "{what}: two broker groups");
    for (group, members) in &groups {
        let masters = members
            .iter()
            .filter(|(_, c)| c["brokerRole"] != "SLAVE")
            .count();
        assert_eq!(masters, 1, "{what}: group {group} has one master");
        assert!(members.len() >= 2, "{what}: group {group} has a slave");
        let ids: BTreeSet<&str> = members
            .iter()
            .map(|(_, c)| c["brokerId"].as_str())
            .collect();
        assert_eq!(ids.len(), members.len(), "{what}: {group}'s brokerIds");
        let clusters: BTreeSet<&str> = members
            .iter()
            .map(|(_, c)| c["brokerClusterName"].as_str())
            .collect();
        assert_eq!(clusters.len(), 1, "{what}: {group} in one cluster");
    }
}

#[test]
fn every_yaml_file_parses() {
    let found = [files(&deploy(), ".yaml"), files(&deploy(), ".yml")].concat();
    assert!(found.len() >= 4, "compose and Kubernetes files: {found:?}");
    for path in found {
        assert!(!yaml(&path).is_empty(), "{}: no document", path.display());
    }
}

#[test]
fn every_conf_file_is_accepted_by_its_binary() {
    let found = files(&deploy(), ".conf");
    assert!(found.len() >= 12, "{found:?}");
    for path in found {
        let name = path.file_name().expect("file name").to_string_lossy();
        effective(
            &path.display().to_string(),
            name.contains("namesrv"),
            &read(&path),
            &[],
        );
    }
}

/// The value of shell assignment `name=value` at the start of a line of `script`.
fn shell_value(script: &str, name: &str) -> String {
    script
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("{name}= in the script"))
        .trim_matches(|c| c == '(' || c == ')')
        .to_owned()
}

/// The processes the script starts from a config directory: name servers, then
/// brokers (the script orders them by file name, masters before `-s` slaves).
fn script_processes(dir: &Path, prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = files(dir, ".conf")
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    names
}

#[test]
fn the_network_namespace_cluster_agrees_with_its_script() {
    let script_path = deploy().join("cluster-netns.sh");
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script_path)
        .status()
        .expect("bash");
    assert!(syntax.success(), "bash -n cluster-netns.sh");
    let script = read(&script_path);
    let (gateway, prefix) = shell_value(&script, "gateway")
        .split_once('/')
        .map(|(a, p)| (a.to_owned(), p.to_owned()))
        .expect("gateway=a.b.c.d/len");
    assert_eq!(prefix, "24");
    let subnet = gateway
        .rsplit_once('.')
        .expect("dotted address")
        .0
        .to_owned();
    // The classic cluster and the controller-mode one (VOSTOK_CLUSTER_CONF).
    for (dir_name, confs) in [("cluster", 6), ("controller", 6)] {
        let dir = deploy().join(dir_name);
        let conf = |name: &str| read(&dir.join(format!("{name}.conf")));
        let mut addresses = BTreeSet::from([gateway.clone()]);
        let mut address = |what: &str, ip: &str| {
            assert!(
                ip.starts_with(&format!("{subnet}.")),
                "{what}: {ip} not on {subnet}.0/24"
            );
            assert!(addresses.insert(ip.to_owned()), "{what}: {ip} used twice");
        };
        let mut namesrvs = BTreeSet::new();
        for name in script_processes(&dir, "namesrv-") {
            assert!(
                format!("vkc-{name}").len() <= 15,
                "interface name of {name}"
            );
            let config = effective(&name, true, &conf(&name), &[]);
            address(&name, &config["bindAddress"]);
            namesrvs.insert(format!(
                "{}:{}",
                config["bindAddress"], config["listenPort"]
            ));
        }
        let mut brokers = BTreeMap::new();
        for name in script_processes(&dir, "broker-") {
            assert!(
                format!("vkc-{name}").len() <= 15,
                "interface name of {name}"
            );
            let config = effective(&name, false, &conf(&name), &[]);
            address(&name, &config["brokerIP1"]);
            assert!(config["storePathRootDir"].ends_with(&format!("/{name}")));
            brokers.insert(name.to_owned(), (config, None));
        }
        assert_eq!(files(&dir, ".conf").len(), confs, "{dir_name}");
        if dir_name == "cluster" {
            check_brokers("cluster-netns", &brokers, &namesrvs);
        } else {
            for (name, (config, _)) in &brokers {
                assert_eq!(config["enableControllerMode"], "true", "{name}");
                for ns in config["namesrvAddr"].split(';') {
                    assert!(namesrvs.contains(ns), "{name}: unknown name server {ns}");
                }
            }
        }
    }
}

/// `-c FILE` and the `-o KEY=VALUE` options of a command line.
fn command_config(argv: &[String]) -> (String, Vec<String>) {
    let after = |flag: &str| {
        argv.iter()
            .zip(argv.iter().skip(1))
            .filter(|(f, _)| *f == flag)
            .map(|(_, v)| v.clone())
            .collect::<Vec<_>>()
    };
    let file = after("-c").pop().expect("-c FILE in the command");
    (file, after("-o"))
}

#[test]
fn compose_agrees_with_its_config_files_and_the_image() {
    let dir = deploy().join("docker");
    let compose = yaml(&dir.join("compose.yaml")).remove(0);
    let services = compose["services"].as_hash().expect("services");
    let subnet = text(&compose["networks"]["vostok"]["ipam"]["config"][0]["subnet"])
        .expect("network subnet");
    let subnet = subnet.strip_suffix(".0/24").expect("a /24");
    let dockerfile = read(&dir.join("Dockerfile"));
    let image_exposes: BTreeSet<u16> = dockerfile
        .lines()
        .filter_map(|l| l.strip_prefix("EXPOSE "))
        .flat_map(|l| l.split_whitespace().filter_map(|p| p.parse().ok()))
        .collect();

    let mut namesrvs = BTreeSet::new();
    let mut brokers = BTreeMap::new();
    let mut namesrv_services = BTreeSet::new();
    let mut depends = BTreeMap::new();
    for (name, service) in services {
        let name = text(name).expect("service name");
        let build = &service["build"];
        let context = dir.join(text(&build["context"]).expect("build context"));
        let file = text(&build["dockerfile"]).expect("dockerfile");
        assert!(
            context.join(&file).exists(),
            "{name}: {file} in its context"
        );
        let argv = strings(&service["command"]);
        let (conf_path, options) = command_config(&argv);
        let volumes = strings(&service["volumes"]);
        let source = volumes
            .iter()
            .find_map(|v| v.strip_suffix(&format!(":{conf_path}:ro")))
            .unwrap_or_else(|| panic!("{name}: {conf_path} mounted read-only"));
        let conf = read(&dir.join(source));
        let exposed: BTreeSet<u16> = strings(&service["expose"])
            .iter()
            .filter_map(|p| p.parse().ok())
            .collect();
        assert!(exposed.is_subset(&image_exposes), "{name}: image EXPOSE");
        let ip = text(&service["networks"]["vostok"]["ipv4_address"]).expect("fixed address");
        assert!(ip.starts_with(&format!("{subnet}.")), "{name}: {ip}");
        let data_volume = |path: &str| {
            volumes.iter().any(|v| {
                let mut parts = v.split(':');
                let (source, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                !source.starts_with('.') && path.starts_with(target)
            })
        };
        match argv[0].as_str() {
            "mqnamesrv" => {
                let config = effective(&name, true, &conf, &options);
                assert!(exposed.contains(&port(&config, "listenPort")), "{name}");
                assert!(
                    data_volume(&config["kvConfigPath"]),
                    "{name}: KV on a volume"
                );
                namesrvs.insert(format!("{name}:{}", config["listenPort"]));
                namesrv_services.insert(name);
            }
            "mqbroker" => {
                let config = effective(&name, false, &conf, &options);
                assert_eq!(config["brokerIP1"], ip, "{name}: brokerIP1");
                assert!(
                    data_volume(&config["storePathRootDir"]),
                    "{name}: store on a volume"
                );
                let waits: BTreeSet<String> = service["depends_on"]
                    .as_hash()
                    .into_iter()
                    .flatten()
                    .filter_map(|(k, _)| text(k))
                    .collect();
                depends.insert(name.clone(), waits);
                brokers.insert(name, (config, Some(exposed)));
            }
            other => panic!("{name}: unexpected program {other}"),
        }
    }
    assert_eq!(namesrv_services.len(), 2);
    for (name, waits) in depends {
        assert!(
            namesrv_services.is_subset(&waits),
            "{name} waits for the name servers"
        );
    }
    check_brokers("compose", &brokers, &namesrvs);
}

/// A pod template's first container, as far as the checks go.
struct Pod<'a> {
    labels: &'a Yaml,
    container: &'a Yaml,
    volumes: &'a Yaml,
}

impl<'a> Pod<'a> {
    fn of(workload: &'a Yaml) -> Pod<'a> {
        let template = &workload["spec"]["template"];
        Pod {
            labels: &template["metadata"]["labels"],
            container: &template["spec"]["containers"][0],
            volumes: &template["spec"]["volumes"],
        }
    }

    fn argv(&self) -> Vec<String> {
        [
            strings(&self.container["command"]),
            strings(&self.container["args"]),
        ]
        .concat()
    }

    /// Container port numbers by name.
    fn ports(&self) -> BTreeMap<String, u16> {
        let ports = self.container["ports"].as_vec().into_iter().flatten();
        ports
            .map(|p| {
                let number = p["containerPort"].as_i64().expect("containerPort");
                (text(&p["name"]).unwrap_or_default(), number as u16)
            })
            .collect()
    }

    /// The readiness probe's TCP port, a name resolved.
    fn ready_port(&self) -> u16 {
        let port = text(&self.container["readinessProbe"]["tcpSocket"]["port"])
            .expect("a tcpSocket readiness probe");
        port.parse()
            .ok()
            .or_else(|| self.ports().get(&port).copied())
            .unwrap_or_else(|| panic!("readiness port {port} is not a container port"))
    }

    /// The volume mounted where `path` lives, and its mount path.
    fn volume_of(&self, path: &str) -> (String, String) {
        let mounts = self.container["volumeMounts"]
            .as_vec()
            .into_iter()
            .flatten();
        mounts
            .filter_map(|m| Some((text(&m["name"])?, text(&m["mountPath"])?)))
            .filter(|(_, mount)| path.starts_with(mount.as_str()))
            .max_by_key(|(_, mount)| mount.len())
            .unwrap_or_else(|| panic!("nothing mounted at {path}"))
    }

    /// Text of the ConfigMap entry mounted at `path`.
    fn config_file(&self, path: &str, config_maps: &BTreeMap<String, &'a Yaml>) -> String {
        let (volume, mount) = self.volume_of(path);
        let volumes = self.volumes.as_vec().into_iter().flatten();
        let map = volumes
            .filter(|v| text(&v["name"]).as_deref() == Some(volume.as_str()))
            .find_map(|v| text(&v["configMap"]["name"]))
            .unwrap_or_else(|| panic!("{path}: volume {volume} is not a ConfigMap"));
        let key = path[mount.len()..].trim_start_matches('/');
        text(&config_maps[&map]["data"][key])
            .unwrap_or_else(|| panic!("ConfigMap {map} has no {key}"))
    }

    /// `$(VAR)` in `s` replaced from `vars`, every variable being defined in `env`.
    fn expand(&self, s: &str, vars: &BTreeMap<&str, String>) -> String {
        let env = self.container["env"].as_vec().into_iter().flatten();
        let env: BTreeMap<String, String> = env
            .filter_map(|e| {
                Some((
                    text(&e["name"])?,
                    text(&e["valueFrom"]["fieldRef"]["fieldPath"])?,
                ))
            })
            .collect();
        let mut out = s.to_owned();
        for (var, value) in vars {
            let reference = format!("$({var})");
            if out.contains(&reference) {
                assert!(
                    env.contains_key(*var),
                    "{var} is not in the container's env"
                );
                out = out.replace(&reference, value);
            }
        }
        assert!(!out.contains("$("), "an undefined variable in {s}");
        out
    }
}

/// Whether Service `service` selects pods labelled `labels`.
fn selects(service: &Yaml, labels: &Yaml) -> bool {
    let selector = service["spec"]["selector"].as_hash().into_iter().flatten();
    selector
        .into_iter()
        .all(|(k, v)| labels[text(k).unwrap_or_default().as_str()] == *v)
}

#[test]
fn kubernetes_manifests_agree_with_each_other() {
    let dir = deploy().join("k8s");
    let kustomization = yaml(&dir.join("kustomization.yaml")).remove(0);
    let listed: BTreeSet<String> = strings(&kustomization["resources"]).into_iter().collect();
    let found: BTreeSet<String> = files(&dir, ".yaml")
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| n != "kustomization.yaml")
        .collect();
    assert_eq!(listed, found, "kustomization resources");
    let docs: Vec<Yaml> = found.iter().flat_map(|f| yaml(&dir.join(f))).collect();
    let of_kind = |kind: &str| {
        docs.iter()
            .filter(|d| d["kind"].as_str() == Some(kind))
            .map(|d| (text(&d["metadata"]["name"]).expect("a name"), d))
            .collect::<BTreeMap<String, &Yaml>>()
    };
    let config_maps = of_kind("ConfigMap");
    let services = of_kind("Service");

    let mut namesrvs = BTreeSet::new();
    for (name, deployment) in of_kind("Deployment") {
        let pod = Pod::of(deployment);
        let argv = pod.argv();
        assert_eq!(argv[0], "mqnamesrv", "{name}");
        let (path, options) = command_config(&argv);
        let config = effective(&name, true, &pod.config_file(&path, &config_maps), &options);
        let listen = port(&config, "listenPort");
        assert_eq!(pod.ready_port(), listen, "{name}: readiness on listenPort");
        assert!(pod.ports().values().any(|p| *p == listen), "{name}: port");
        let fronts: Vec<_> = services
            .iter()
            .filter(|(_, s)| selects(s, pod.labels))
            .collect();
        assert_eq!(fronts.len(), 1, "{name}: one Service per name server");
        let (service, spec) = fronts[0];
        let service_port = &spec["spec"]["ports"][0];
        let target = text(&service_port["targetPort"]).expect("targetPort");
        let target = target
            .parse()
            .ok()
            .or_else(|| pod.ports().get(&target).copied());
        assert_eq!(target, Some(listen), "{service}: targetPort");
        let port = text(&service_port["port"]).expect("Service port");
        namesrvs.insert(format!("{service}:{port}"));
    }
    assert_eq!(namesrvs.len(), 2, "two name servers");

    let mut brokers = BTreeMap::new();
    for (name, set) in of_kind("StatefulSet") {
        let pod = Pod::of(set);
        let argv = pod.argv();
        assert_eq!(argv[0], "mqbroker", "{name}");
        let headless = text(&set["spec"]["serviceName"]).expect("serviceName");
        let headless = services[&headless];
        assert_eq!(
            text(&headless["spec"]["clusterIP"]).as_deref(),
            Some("None")
        );
        assert!(
            selects(headless, pod.labels),
            "{name}: its Service selects it"
        );
        let claims: BTreeSet<String> = set["spec"]["volumeClaimTemplates"]
            .as_vec()
            .into_iter()
            .flatten()
            .filter_map(|c| text(&c["metadata"]["name"]))
            .collect();
        let replicas = set["spec"]["replicas"].as_i64().expect("replicas");
        for ordinal in 0..replicas {
            let pod_name = format!("{name}-{ordinal}");
            let vars = BTreeMap::from([
                ("POD_NAME", pod_name.clone()),
                ("POD_IP", format!("10.0.0.{}", ordinal + 1)),
            ]);
            let argv: Vec<String> = argv.iter().map(|a| pod.expand(a, &vars)).collect();
            let (path, options) = command_config(&argv);
            let conf = pod.config_file(&path, &config_maps);
            let config = effective(&pod_name, false, &conf, &options);
            assert_eq!(config["brokerIP1"], vars["POD_IP"], "{pod_name}");
            assert_eq!(config["brokerName"], name, "{pod_name}: brokerName");
            assert_eq!(
                config["brokerId"],
                ordinal.to_string(),
                "{pod_name}: brokerId"
            );
            let listen = port(&config, "listenPort");
            assert_eq!(
                pod.ready_port(),
                listen,
                "{pod_name}: readiness on listenPort"
            );
            let (volume, _) = pod.volume_of(&config["storePathRootDir"]);
            assert!(claims.contains(&volume), "{pod_name}: store on a claim");
            let exposed = pod.ports().into_values().collect();
            brokers.insert(pod_name, (config, Some(exposed)));
        }
    }
    check_brokers("kubernetes", &brokers, &namesrvs);
}
