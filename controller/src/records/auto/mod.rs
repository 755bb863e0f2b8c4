//! Automatic records (`--auto-records`): ServiceDNSRecords,
//! IngressDNSRecords and RouteDNSRecords made from what the user already has, instead of by
//! hand (kubefed's way):
//! * a Service or Ingress *template* (the object a propagation engine
//!   copies to members) annotated `multiclusterdns.fedns.io/domain: <Domain>`,
//!   in the host, or in the Karmada control plane when that is another
//!   API server (`--karmada-kubeconfig`);
//! * a kubefed `FederatedService` (`types.kubefed.io/v1beta1`) annotated
//!   the same way (on itself or on `spec.template`);
//! * an MCS `ServiceExport` (`multicluster.x-k8s.io/v1alpha1`) in any member
//!   whose Service of that name is of type LoadBalancer; its Domain from the
//!   same annotation on the ServiceExport, else `--auto-records-domain`.
//!   Several members exporting one Service make one record. While a
//!   member's ServiceExports are not listed yet, no record made from a
//!   ServiceExport is deleted;
//! * a Gateway API route (`HTTPRoute` … `UDPRoute`) annotated the same way,
//!   in the host, the engines' control planes, as a kubefed
//!   `Federated<Kind>`, or in any member (plain kubectl, Argo CD): a
//!   `RouteDNSRecord` of its kind and name, with the annotation
//!   `multiclusterdns.fedns.io/hosts` (comma-separated) as its `spec.hosts`
//!   (required for TCPRoute and UDPRoute). The same route in several
//!   clusters makes one record, owned by the host's copy if there is one.
//!   While a member's routes are not listed yet, no RouteDNSRecord is
//!   deleted.
//!
//! A member's ServiceExports and routes make records only where its
//! MemberCluster allows them (`spec.autoRecords`: namespaces, and host-name
//! patterns every name the record would publish must be inside; a route
//! without the hosts annotation or hostnames is refused, and so is a route
//! some member holding a copy of it does not allow, since the record
//! follows every copy). Absent, nothing of that member makes a record. A
//! refused template makes no record (one it made before is deleted), is
//! logged once (Warning, with member, kind, namespace, name and reason)
//! and counted in the MemberCluster's condition `AutoRecordsRefused`;
//! nothing is written into the member. Templates in the host and in the
//! engines' control planes are the operator's and need no allowance.
//!
//! Optional annotations: `multiclusterdns.fedns.io/ttl` (seconds,
//! 1..86400) and `multiclusterdns.fedns.io/dns-prefix`. An Ingress gives its
//! `spec.rules[].host` names.
//!
//! Every generated record is labelled `app.kubernetes.io/managed-by: fedns`
//! and annotated `fedns.io/generated-from: <Kind>/<namespace>/<name>`; a
//! source in the host is its owner (garbage collection removes the record
//! with it). Only labelled records are ever changed or deleted: a record of
//! the same name written by someone else is left alone and the source gets
//! a Warning Event `RecordExists`. A generated record whose source is gone
//! (or lost its annotation) is deleted.

mod plan;
mod sync;

pub use plan::{
    admit, plan, wanted, Action, Existing, FromMember, Problem, RecordKind, Refusal, RouteCopies, Template, Wanted,
    DOMAIN_ANNOTATION, GENERATED_FROM_ANNOTATION, HOSTS_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL, NOT_ALLOWED,
    PREFIX_ANNOTATION, REFUSALS_LISTED, REFUSED_CONDITION, TTL_ANNOTATION,
};
pub use sync::{AutoRecords, TemplateSource};
