//! The Kubernetes manifests as `kubectl apply -k deploy/k8s` would send them, checked
//! offline for what the API server or the scheduler would otherwise find late: the
//! fields every object needs, an image a local cluster (kind, minikube) can run
//! without a registry, a master and its slave kept off one node, and an image that
//! carries the operator tool. How the manifests agree with the binaries' settings is
//! deploy_manifests.rs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn yaml(path: &Path) -> Vec<Yaml> {
    YamlLoader::load_from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The objects of the kustomization, in the namespace it sets.
fn rendered() -> Vec<Yaml> {
    let dir = deploy().join("k8s");
    let kustomization = yaml(&dir.join("kustomization.yaml")).remove(0);
    let resources = kustomization["resources"].as_vec().expect("resources");
    let objects: Vec<Yaml> = resources
        .iter()
        .map(|r| r.as_str().expect("a resource path"))
        .flat_map(|r| yaml(&dir.join(r)))
        .collect();
    assert!(
        kustomization["namespace"].as_str().is_some(),
        "the kustomization sets the namespace"
    );
    objects
}

fn non_empty(y: &Yaml) -> bool {
    y.as_str().is_some_and(|s| !s.trim().is_empty())
}

/// Whether every label of `selector` (a `matchLabels` map) is on `labels`.
fn selects(selector: &Yaml, labels: &Yaml) -> bool {
    selector.as_hash().is_some_and(|m| {
        !m.is_empty()
            && m.iter()
                .all(|(k, v)| labels[k.as_str().unwrap_or("")] == *v)
    })
}

#[test]
fn every_object_has_the_fields_the_api_server_requires() {
    let objects = rendered();
    assert!(objects.len() >= 8, "{} objects", objects.len());
    let mut names = BTreeSet::new();
    for object in &objects {
        let kind = object["kind"].as_str().expect("kind");
        let name = &object["metadata"]["name"];
        assert!(non_empty(name), "a {kind} without metadata.name");
        let name = name.as_str().unwrap_or_default();
        let api = match kind {
            "Namespace" | "ConfigMap" | "Service" => "v1",
            "Deployment" | "StatefulSet" => "apps/v1",
            other => panic!("{name}: unexpected kind {other}"),
        };
        assert_eq!(object["apiVersion"].as_str(), Some(api), "{kind} {name}");
        assert!(names.insert((kind, name)), "{kind} {name} twice");
        if kind == "Service" {
            assert!(
                object["spec"]["ports"]
                    .as_vec()
                    .is_some_and(|p| !p.is_empty()),
                "Service {name}: ports"
            );
        }
    }
}

#[test]
fn workloads_run_a_local_image_and_select_their_own_pods() {
    let objects = rendered();
    let workloads: Vec<&Yaml> = objects
        .iter()
        .filter(|o| matches!(o["kind"].as_str(), Some("Deployment" | "StatefulSet")))
        .collect();
    assert_eq!(workloads.len(), 4, "two name servers, two broker groups");
    for workload in workloads {
        let name = workload["metadata"]["name"].as_str().unwrap_or_default();
        let template = &workload["spec"]["template"];
        let labels = &template["metadata"]["labels"];
        assert!(
            selects(&workload["spec"]["selector"]["matchLabels"], labels),
            "{name}: the selector matches the pod template"
        );
        let containers = template["spec"]["containers"].as_vec().expect("containers");
        assert!(!containers.is_empty(), "{name}: a container");
        for container in containers {
            assert!(non_empty(&container["name"]), "{name}: container name");
            assert!(non_empty(&container["image"]), "{name}: image");
            // Without it, an image tagged :latest is pulled on every start, and a
            // cluster given a local image fails with ErrImagePull.
            assert_eq!(
                container["imagePullPolicy"].as_str(),
                Some("IfNotPresent"),
                "{name}: imagePullPolicy"
            );
        }
    }
}

#[test]
fn a_master_and_its_slave_avoid_sharing_a_node() {
    let objects = rendered();
    let sets: Vec<&Yaml> = objects
        .iter()
        .filter(|o| o["kind"].as_str() == Some("StatefulSet"))
        .collect();
    assert_eq!(sets.len(), 2, "a StatefulSet per broker group");
    for set in sets {
        let name = set["metadata"]["name"].as_str().unwrap_or_default();
        assert!(
            set["spec"]["replicas"].as_i64() >= Some(2),
            "{name}: a slave"
        );
        let template = &set["spec"]["template"];
        let labels = &template["metadata"]["labels"];
        let anti = &template["spec"]["affinity"]["podAntiAffinity"];
        let required = anti["requiredDuringSchedulingIgnoredDuringExecution"]
            .as_vec()
            .into_iter()
            .flatten();
        let preferred = anti["preferredDuringSchedulingIgnoredDuringExecution"]
            .as_vec()
            .into_iter()
            .flatten()
            .map(|p| &p["podAffinityTerm"]);
        let apart = required.chain(preferred).any(|term| {
            term["topologyKey"].as_str() == Some("kubernetes.io/hostname")
                && selects(&term["labelSelector"]["matchLabels"], labels)
        });
        assert!(
            apart,
            "{name}: pod anti-affinity by node over the group's own pods"
        );
    }
}

#[test]
fn the_image_carries_mqadmin() {
    let dockerfile = read(&deploy().join("docker/Dockerfile"));
    let build = dockerfile
        .split("\nRUN ")
        .find(|step| step.starts_with("cargo build"))
        .expect("a cargo build step");
    assert!(build.contains("--bin mqadmin"), "mqadmin is built: {build}");
    // The COPY instruction, with its continuation lines.
    let copy = dockerfile
        .split("\nCOPY --from=build ")
        .nth(1)
        .expect("the run stage copies the programs");
    let mut copied = String::new();
    for line in copy.lines() {
        copied.push_str(line);
        if !line.ends_with('\\') {
            break;
        }
    }
    for program in ["mqnamesrv", "mqbroker", "mqadmin"] {
        assert!(
            copied.contains(&format!("/usr/local/bin/{program}")),
            "{program} in the image: {copied}"
        );
    }
}
