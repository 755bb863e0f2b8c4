//! The verbs that write an object: create (with the built-in kinds' hooks
//! and CRD admission), update and patch (merge, JSON, strategic-as-merge,
//! apply), through one `replace` that bumps `metadata.generation`.

use serde_json::{json, Value};

use crate::status::ApiError;
use crate::store::resources::ResourceInfo;

use super::meta::*;
use super::*;

impl Store {
    /// POST: creates an object.
    ///
    /// # Errors
    /// AlreadyExists, NotFound (namespace), BadRequest, Invalid.
    pub fn create(&self, info: &ResourceInfo, namespace: Option<&str>, mut object: Value) -> Result<Value, ApiError> {
        if !object.is_object() {
            return Err(ApiError::bad_request("the body must be a JSON object"));
        }
        if let Some(kind) = object.get("kind").and_then(Value::as_str) {
            if kind != info.kind {
                return Err(ApiError::bad_request(format!(
                    "kind {kind} does not match the resource {} ({})",
                    info.plural, info.kind
                )));
            }
        }
        let mut inner = self.lock();
        let body_ns = meta(&object, "namespace");
        let namespace = if info.namespaced {
            namespace.map(str::to_owned).or(body_ns.clone())
        } else {
            None
        };
        if info.namespaced && body_ns.is_some() && body_ns != namespace {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        Self::check_namespace(&inner, info, namespace.as_deref())?;
        let name = match (meta(&object, "name"), meta(&object, "generateName")) {
            (Some(name), _) if !name.is_empty() => name,
            (_, Some(prefix)) if !prefix.is_empty() => format!("{prefix}{}", random_suffix()),
            _ => {
                return Err(ApiError::invalid(
                    &info.kind,
                    "",
                    vec![("metadata.name".into(), "name or generateName is required".into())],
                ))
            }
        };
        let key = (namespace.clone().unwrap_or_default(), name.clone());
        if inner
            .collections
            .get(&info.collection())
            .is_some_and(|c| c.contains_key(&key))
        {
            return Err(ApiError::already_exists(&info.group, &info.plural, &name));
        }
        object["apiVersion"] = json!(info.api_version());
        object["kind"] = json!(info.kind);
        set_meta(&mut object, "name", json!(name));
        match &namespace {
            Some(ns) => set_meta(&mut object, "namespace", json!(ns)),
            None => remove_meta(&mut object, "namespace"),
        }
        for field in ["deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"] {
            remove_meta(&mut object, field);
        }
        set_meta(&mut object, "uid", json!(uuid::Uuid::new_v4().to_string()));
        set_meta(&mut object, "creationTimestamp", json!(now_rfc3339()));
        set_meta(&mut object, "generation", json!(1));
        if info.has_status {
            // POST ignores status where a status subresource exists.
            if let Value::Object(m) = &mut object {
                m.remove("status");
            }
        }
        Self::validate_custom(info, &mut object, None)?;
        self.builtin_create_hooks(&mut inner, info, &mut object)?;
        inner.rv += 1;
        set_meta(&mut object, "resourceVersion", json!(inner.rv.to_string()));
        let stored = self.commit(&mut inner, info, EventKind::Added, object, None);
        inner
            .collections
            .entry(info.collection())
            .or_default()
            .insert(key, stored.clone());
        Ok(Self::with_version(info, &stored))
    }

    pub(super) fn builtin_create_hooks(
        &self,
        inner: &mut Inner,
        info: &ResourceInfo,
        object: &mut Value,
    ) -> Result<(), ApiError> {
        match (info.group.as_str(), info.plural.as_str()) {
            ("", "secrets") => normalize_secret(object),
            ("", "namespaces") => object["status"] = json!({"phase": "Active"}),
            ("", "services") => {
                let kind = object
                    .pointer("/spec/type")
                    .and_then(Value::as_str)
                    .unwrap_or("ClusterIP");
                let has_ip = object.pointer("/spec/clusterIP").and_then(Value::as_str).is_some();
                if kind != "ExternalName" && !has_ip {
                    // Bookkeeping only: nothing ever connects to these.
                    let n = inner.next_cluster_ip;
                    inner.next_cluster_ip += 1;
                    let ip = format!("10.96.{}.{}", (n >> 8) & 0xff, n & 0xff);
                    object["spec"]["clusterIP"] = json!(ip);
                    object["spec"]["clusterIPs"] = json!([ip]);
                }
            }
            ("apiextensions.k8s.io", "customresourcedefinitions") => {
                Self::admit_crd(inner, object)?;
                let names = object.pointer("/spec/names").cloned().unwrap_or(json!({}));
                // As PrepareForCreate: the storage version only, not every
                // served one (a multi-version CRD such as Cluster API's
                // stores v1beta2 and serves v1beta1 too).
                let stored: Vec<Value> = object
                    .pointer("/spec/versions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                    .filter_map(|v| v.get("name").cloned())
                    .collect();
                let now = now_rfc3339();
                object["status"] = json!({
                    "acceptedNames": names,
                    "storedVersions": stored,
                    "conditions": [
                        {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now},
                        {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now},
                    ],
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// Validates a CRD as the API server does (structural schema and the
    /// rest of `validateCustomResourceDefinition`, [`crate::validation::crd_validation`];
    /// CEL rules compile, [`crate::validation::cel`]) and serves its versions.
    ///
    /// # Errors
    /// Invalid (422) with every field path the API server would name.
    pub(super) fn admit_crd(inner: &mut Inner, object: &Value) -> Result<Vec<ResourceInfo>, ApiError> {
        let name = meta(object, "name").unwrap_or_default();
        let errors = crate::validation::crd_validation::validate_crd(object);
        if !errors.is_empty() {
            return Err(ApiError::invalid("CustomResourceDefinition", &name, errors));
        }
        inner
            .registry
            .register_crd(object)
            .map_err(|e| ApiError::invalid("CustomResourceDefinition", &name, vec![("spec".into(), e)]))
    }

    /// PUT (update) of the object or its status.
    ///
    /// # Errors
    /// NotFound, Conflict (stale resourceVersion), BadRequest, Invalid.
    pub fn update(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        body: Value,
        target: Target,
    ) -> Result<Value, ApiError> {
        let mut inner = self.lock();
        self.replace(&mut inner, info, namespace, name, body, target, None)
    }

    /// PATCH of the object or its status; apply patches create missing objects.
    ///
    /// # Errors
    /// NotFound, Conflict, BadRequest (malformed patch), Invalid.
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        kind: PatchKind,
        patch: Value,
        field_manager: Option<&str>,
        target: Target,
    ) -> Result<Value, ApiError> {
        let mut inner = self.lock();
        let key = (namespace.unwrap_or_default().to_owned(), name.to_owned());
        let existing = inner
            .collections
            .get(&info.collection())
            .and_then(|c| c.get(&key))
            .cloned();
        let Some(old) = existing else {
            drop(inner);
            if kind == PatchKind::Apply && target == Target::Main {
                let mut object = patch;
                set_meta(&mut object, "name", json!(name));
                add_managed_fields(&mut object, field_manager, &info.api_version());
                return self.create(info, namespace, object);
            }
            return Err(ApiError::not_found(&info.group, &info.plural, name));
        };
        let mut doc = (*old).clone();
        match kind {
            PatchKind::Merge | PatchKind::Strategic | PatchKind::Apply => {
                if !patch.is_object() {
                    return Err(ApiError::bad_request("a merge patch must be a JSON object"));
                }
                json_patch::merge(&mut doc, &patch);
            }
            PatchKind::Json => {
                let ops: json_patch::Patch = serde_json::from_value(patch)
                    .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
                json_patch::patch(&mut doc, &ops)
                    .map_err(|e| ApiError::invalid(&info.kind, name, vec![("<patch>".into(), e.to_string())]))?;
            }
        }
        if kind == PatchKind::Apply {
            add_managed_fields(&mut doc, field_manager, &info.api_version());
        }
        // Read and write under one lock: a patch without a resourceVersion
        // never conflicts (the real server retries internally).
        self.replace(&mut inner, info, namespace, name, doc, target, None)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn replace(
        &self,
        inner: &mut Inner,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        mut body: Value,
        target: Target,
        expected_rv: Option<String>,
    ) -> Result<Value, ApiError> {
        if !body.is_object() {
            return Err(ApiError::bad_request("the body must be a JSON object"));
        }
        let (key, old) = Self::existing(inner, info, namespace, name)?;
        let wanted_rv = expected_rv
            .or_else(|| meta(&body, "resourceVersion"))
            .filter(|rv| !rv.is_empty());
        if wanted_rv.is_some_and(|rv| Some(rv) != meta(&old, "resourceVersion")) {
            return Err(ApiError::conflict(&info.group, &info.plural, name));
        }
        if let Some(body_name) = meta(&body, "name") {
            if body_name != name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({body_name}) does not match the name on the URL ({name})"
                )));
            }
        }
        let mut new = match target {
            Target::Main => {
                let mut new = body;
                if info.has_status {
                    match old.get("status") {
                        Some(status) => new["status"] = status.clone(),
                        None => {
                            if let Value::Object(m) = &mut new {
                                m.remove("status");
                            }
                        }
                    }
                }
                new
            }
            Target::Status => {
                let mut new = (*old).clone();
                match body.get_mut("status").map(Value::take) {
                    Some(status) => new["status"] = status,
                    None => {
                        if let Value::Object(m) = &mut new {
                            m.remove("status");
                        }
                    }
                }
                new
            }
        };
        // Server-owned metadata stays as it was.
        new["apiVersion"] = json!(info.api_version());
        new["kind"] = json!(info.kind);
        for field in [
            "uid",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "namespace",
        ] {
            match old.get("metadata").and_then(|m| m.get(field)) {
                Some(v) => set_meta(&mut new, field, v.clone()),
                None => remove_meta(&mut new, field),
            }
        }
        set_meta(&mut new, "name", json!(name));
        if info.group.is_empty() && info.plural == "secrets" {
            normalize_secret(&mut new);
        }
        Self::validate_custom(info, &mut new, Some(&old))?;
        if info.group == "apiextensions.k8s.io" && info.plural == "customresourcedefinitions" && target == Target::Main
        {
            // An updated CRD is checked like a new one, and its new schema
            // is what its resources are validated with from now on.
            Self::admit_crd(inner, &new)?;
        }
        set_meta(&mut new, "resourceVersion", old["metadata"]["resourceVersion"].clone());
        if new == *old.value() {
            return Ok(Self::with_version(info, &old)); // no-op: no new version
        }
        if spec_part_differs(&new, &old, info.has_status) {
            let generation = old.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
            set_meta(&mut new, "generation", json!(generation + 1));
        }
        inner.rv += 1;
        set_meta(&mut new, "resourceVersion", json!(inner.rv.to_string()));
        let finalizers_gone = new
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_none_or(|f| f.is_empty());
        if meta(&new, "deletionTimestamp").is_some() && finalizers_gone {
            let stored = self.commit(inner, info, EventKind::Deleted, new, None);
            if let Some(c) = inner.collections.get_mut(&info.collection()) {
                c.remove(&key);
            }
            return Ok(Self::with_version(info, &stored));
        }
        let stored = self.commit(inner, info, EventKind::Modified, new, Some(old));
        inner
            .collections
            .entry(info.collection())
            .or_default()
            .insert(key, stored.clone());
        Ok(Self::with_version(info, &stored))
    }
}
