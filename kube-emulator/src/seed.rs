//! Seeding an emulator from manifests, as `kubectl apply -f DIR` would,
//! plus status: exported cluster state (`kubectl get ... -o yaml`) carries
//! status (load balancer addresses, conditions), which is written through
//! the status subresource after the object.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::status::ApiError;
use crate::store::{Store, Target};

/// What a seed did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SeedReport {
    /// Objects created or updated.
    pub applied: usize,
    /// Documents of kinds this emulator does not serve:
    /// `file: apiVersion/kind name`.
    pub skipped: Vec<String>,
}

/// Why seeding stopped.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    /// A file or folder could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A document is not valid YAML or lacks apiVersion/kind/metadata.name.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The emulator rejected an object.
    #[error("{path}: {kind} {name}: {error}")]
    Rejected {
        /// The file.
        path: PathBuf,
        /// The object's kind.
        kind: String,
        /// The object's name.
        name: String,
        /// The API error.
        error: Box<ApiError>,
    },
}

struct Document {
    path: PathBuf,
    object: Value,
}

/// Parses every document under `paths`; returns how many.
pub(crate) fn parse_paths(paths: &[PathBuf]) -> Result<usize, SeedError> {
    Ok(read_documents(paths)?.len())
}

fn read_documents(paths: &[PathBuf]) -> Result<Vec<Document>, SeedError> {
    let mut documents = Vec::new();
    for path in paths {
        let mut files = Vec::new();
        collect(path, &mut files)?;
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(|source| SeedError::Io {
                path: file.clone(),
                source,
            })?;
            parse_documents(&file, &text, &mut documents)?;
        }
    }
    Ok(documents)
}

/// Reads every document first (so a malformed file stops the seed before
/// anything is written), then applies CRDs, then Namespaces, then the rest.
pub(crate) fn seed_paths(store: &Store, paths: &[PathBuf]) -> Result<SeedReport, SeedError> {
    let documents = read_documents(paths)?;
    apply_documents(store, documents)
}

/// Seeds `store` from YAML `text` (`origin` names it in errors), as
/// [`crate::Emulator::seed_yaml`] does, for stores used without a server.
///
/// # Errors
/// A malformed document stops the seed before any object is written; a
/// rejected object stops it at that object.
pub fn seed_text(store: &Store, origin: &str, text: &str) -> Result<SeedReport, SeedError> {
    let mut documents = Vec::new();
    parse_documents(Path::new(origin), text, &mut documents)?;
    apply_documents(store, documents)
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) -> Result<(), SeedError> {
    let io = |source| SeedError::Io {
        path: path.to_owned(),
        source,
    };
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(io)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(io)?;
        entries.sort();
        for entry in entries {
            let is_manifest = entry
                .extension()
                .is_some_and(|e| e == "yaml" || e == "yml" || e == "json");
            if entry.is_dir() || is_manifest {
                collect(&entry, out)?;
            }
        }
        Ok(())
    } else {
        std::fs::metadata(path).map_err(io)?;
        out.push(path.to_owned());
        Ok(())
    }
}

fn parse_documents(path: &Path, text: &str, out: &mut Vec<Document>) -> Result<(), SeedError> {
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        let value = Value::deserialize(document).map_err(|e| SeedError::Parse {
            path: path.to_owned(),
            line: e.location().map_or(1, |l| l.line()),
            message: e.to_string(),
        })?;
        push_object(path, value, out)?;
    }
    Ok(())
}

fn push_object(path: &Path, value: Value, out: &mut Vec<Document>) -> Result<(), SeedError> {
    if value.is_null() {
        return Ok(());
    }
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind.ends_with("List") && value.get("items").is_some() {
        for item in value["items"].as_array().cloned().unwrap_or_default() {
            push_object(path, item, out)?;
        }
        return Ok(());
    }
    let missing = ["apiVersion", "kind"]
        .into_iter()
        .find(|f| value.get(*f).and_then(Value::as_str).is_none_or(str::is_empty))
        .or_else(|| {
            value
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .is_none()
                .then_some("metadata.name")
        });
    if let Some(field) = missing {
        return Err(SeedError::Parse {
            path: path.to_owned(),
            line: 1,
            message: format!("a document lacks {field}"),
        });
    }
    out.push(Document {
        path: path.to_owned(),
        object: value,
    });
    Ok(())
}

fn priority(object: &Value) -> u8 {
    match object.get("kind").and_then(Value::as_str) {
        Some("CustomResourceDefinition") => 0,
        Some("Namespace") => 1,
        _ => 2,
    }
}

/// Fields the server sets; exported objects carry them and they must go.
fn strip_server_fields(object: &mut Value) {
    if let Some(Value::Object(meta)) = object.get_mut("metadata") {
        for field in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "managedFields",
            "generation",
            "selfLink",
            "deletionTimestamp",
        ] {
            meta.remove(field);
        }
    }
}

fn apply_documents(store: &Store, mut documents: Vec<Document>) -> Result<SeedReport, SeedError> {
    documents.sort_by_key(|d| priority(&d.object));
    let mut report = SeedReport::default();
    for Document { path, mut object } in documents {
        strip_server_fields(&mut object);
        let api_version = object["apiVersion"].as_str().unwrap_or_default().to_owned();
        let kind = object["kind"].as_str().unwrap_or_default().to_owned();
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let Some(info) = store.resource_for_kind(&api_version, &kind) else {
            report
                .skipped
                .push(format!("{}: {api_version}/{kind} {name}", path.display()));
            continue;
        };
        let rejected = |error: ApiError| SeedError::Rejected {
            path: path.clone(),
            kind: kind.clone(),
            name: name.clone(),
            error: Box::new(error),
        };
        let namespace = if info.namespaced {
            let ns = object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("default")
                .to_owned();
            ensure_namespace(store, &ns).map_err(rejected)?;
            Some(ns)
        } else {
            None
        };
        // A CRD's status is the API server's own (names accepted,
        // Established, stored versions: its controllers rewrite whatever a
        // client writes there); generated CRDs carry an empty one
        // (kubefed's: `storedVersions: []`), which must not replace it.
        let status = object
            .get("status")
            .cloned()
            .filter(|_| kind != "CustomResourceDefinition");
        let created = match store.create(&info, namespace.as_deref(), object.clone()) {
            Ok(created) => created,
            Err(e) if e.reason == "AlreadyExists" => {
                let mut existing = store.get(&info, namespace.as_deref(), &name).map_err(rejected)?;
                let resource_version = existing["metadata"]["resourceVersion"].clone();
                json_patch::merge(&mut existing, &object);
                existing["metadata"]["resourceVersion"] = resource_version;
                store
                    .update(&info, namespace.as_deref(), &name, existing, Target::Main)
                    .map_err(rejected)?
            }
            Err(e) => return Err(rejected(e)),
        };
        if let (Some(status), true) = (status, info.has_status) {
            let mut with_status = created;
            with_status["status"] = status;
            store
                .update(&info, namespace.as_deref(), &name, with_status, Target::Status)
                .map_err(rejected)?;
        }
        report.applied += 1;
    }
    Ok(report)
}

fn ensure_namespace(store: &Store, namespace: &str) -> Result<(), ApiError> {
    let Some(info) = store.resource("", "v1", "namespaces") else {
        return Ok(());
    };
    match store.create(&info, None, json!({"metadata": {"name": namespace}})) {
        Ok(_) => Ok(()),
        Err(e) if e.reason == "AlreadyExists" => Ok(()),
        Err(e) => Err(e),
    }
}
