//! A static source: Domain and DNSEndpoint objects read from YAML files
//! (`fedns dns-server --manifests PATH`), for serving without a cluster
//! and for benchmarks. Namespace objects give the labels a Domain's
//! `allowedNamespaces` selector matches.

use std::path::{Path, PathBuf};

use fedns_api::{DNSEndpoint, Domain};
use serde::Deserialize;

/// Objects read from manifests.
#[derive(Debug, Default, Clone)]
pub struct Manifests {
    /// Every Domain found.
    pub domains: Vec<Domain>,
    /// Every DNSEndpoint found.
    pub endpoints: Vec<DNSEndpoint>,
    /// Labels of every Namespace found.
    pub namespaces: crate::plan::ownership::NamespaceLabels,
    /// Documents of other kinds, skipped: "file: kind name".
    pub skipped: Vec<String>,
    /// The newest modification time of the files read (None: none had
    /// one), from which `fedns dns-server --manifests` takes its serials.
    pub newest_modified: Option<std::time::SystemTime>,
}

/// Why manifests could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// A file or folder could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A document is not valid YAML or not a valid object of its kind.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error (of the document's start when unknown).
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// Reads every `.yaml`/`.yml` file at `path` (a file, or a folder read
/// recursively in name order). Multi-document files and `kind: List`
/// wrappers are understood. Kinds other than Domain, DNSEndpoint and
/// Namespace are listed in [`Manifests::skipped`].
///
/// # Errors
/// The first unreadable file or malformed document, with file and line.
pub fn load(path: &Path) -> Result<Manifests, ManifestError> {
    let mut files = Vec::new();
    collect_files(path, &mut files)?;
    let mut manifests = Manifests::default();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|source| ManifestError::Io {
            path: file.clone(),
            source,
        })?;
        if let Ok(modified) = std::fs::metadata(&file).and_then(|m| m.modified()) {
            manifests.newest_modified = manifests.newest_modified.max(Some(modified));
        }
        for document in serde_yaml_ng::Deserializer::from_str(&text) {
            let value = serde_json::Value::deserialize(document).map_err(|e| ManifestError::Parse {
                path: file.clone(),
                line: e.location().map_or(1, |l| l.line()),
                message: e.to_string(),
            })?;
            add_object(&file, value, &mut manifests)?;
        }
    }
    Ok(manifests)
}

fn collect_files(path: &Path, out: &mut Vec<PathBuf>) -> Result<(), ManifestError> {
    let io = |source| ManifestError::Io {
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
            if entry.is_dir() || entry.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                collect_files(&entry, out)?;
            }
        }
    } else {
        std::fs::metadata(path).map_err(io)?;
        out.push(path.to_owned());
    }
    Ok(())
}

fn add_object(file: &Path, value: serde_json::Value, out: &mut Manifests) -> Result<(), ManifestError> {
    if value.is_null() {
        return Ok(());
    }
    let kind = value
        .get("kind")
        .and_then(|k| k.as_str())
        .unwrap_or_default()
        .to_owned();
    let parse_error = |e: serde_json::Error| ManifestError::Parse {
        path: file.to_owned(),
        line: 1,
        message: format!("{kind}: {e}"),
    };
    match kind.as_str() {
        "List" => {
            for item in value
                .get("items")
                .and_then(|i| i.as_array())
                .cloned()
                .unwrap_or_default()
            {
                add_object(file, item, out)?;
            }
        }
        "Domain" => out.domains.push(serde_json::from_value(value).map_err(parse_error)?),
        "DNSEndpoint" => out.endpoints.push(serde_json::from_value(value).map_err(parse_error)?),
        "Namespace" => {
            let namespace: fedns_api::k8s_openapi::api::core::v1::Namespace =
                serde_json::from_value(value).map_err(parse_error)?;
            out.namespaces.insert(
                namespace.metadata.name.unwrap_or_default(),
                namespace.metadata.labels.unwrap_or_default(),
            );
        }
        _ => {
            let name = value.pointer("/metadata/name").and_then(|n| n.as_str()).unwrap_or("?");
            out.skipped.push(format!("{}: {kind} {name}", file.display()));
        }
    }
    Ok(())
}
