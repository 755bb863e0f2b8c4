//! The environment rules are compiled in: the libraries of
//! `apiserver/pkg/cel/environment/base.go` that this module implements: the
//! CEL standard library, cel-go's strings and lists extensions (from the
//! `cel` crate), the sets extension and Kubernetes' functions
//! ([`super::library`], [`super::net`], [`super::duration`]).

use std::sync::{Arc, LazyLock};

use cel::common::types::{DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE};
use cel::Env;

use super::duration::duration_fn;
use super::library::{
    list_index_of, list_is_sorted, list_last_index_of, list_max, list_min, list_sum, sets_contains, sets_equivalent,
    sets_intersects, string_find, string_find_all,
};
use super::net::{is_cidr_fn, is_ip_fn, is_url_fn};

pub(super) static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(build_env()));

fn build_env() -> Env {
    let mut env = Env::stdlib();
    let declared = (|| -> Result<(), cel::DeclarationError> {
        cel::extensions::strings(&mut env)?;
        cel::extensions::lists(&mut env)?;
        env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], list_is_sorted)?;
        env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], list_sum)?;
        env.add_member_overload("min", "list_min", LIST_TYPE, vec![], list_min)?;
        env.add_member_overload("max", "list_max", LIST_TYPE, vec![], list_max)?;
        env.add_member_overload("indexOf", "list_index_of", LIST_TYPE, vec![DYN_TYPE], list_index_of)?;
        env.add_member_overload(
            "lastIndexOf",
            "list_last_index_of",
            LIST_TYPE,
            vec![DYN_TYPE],
            list_last_index_of,
        )?;
        env.add_member_overload("find", "string_find", STRING_TYPE, vec![STRING_TYPE], string_find)?;
        env.add_member_overload(
            "findAll",
            "string_find_all",
            STRING_TYPE,
            vec![STRING_TYPE],
            string_find_all,
        )?;
        env.add_member_overload(
            "findAll",
            "string_find_all_n",
            STRING_TYPE,
            vec![STRING_TYPE, INT_TYPE],
            string_find_all,
        )?;
        env.add_overload("isURL", "is_url", vec![STRING_TYPE], is_url_fn)?;
        env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip_fn)?;
        env.add_overload("duration", "string_to_duration", vec![STRING_TYPE], duration_fn)?;
        env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr_fn)?;
        env.add_overload(
            "sets.contains",
            "sets_contains",
            vec![LIST_TYPE, LIST_TYPE],
            sets_contains,
        )?;
        env.add_overload(
            "sets.equivalent",
            "sets_equivalent",
            vec![LIST_TYPE, LIST_TYPE],
            sets_equivalent,
        )?;
        env.add_overload(
            "sets.intersects",
            "sets_intersects",
            vec![LIST_TYPE, LIST_TYPE],
            sets_intersects,
        )?;
        Ok(())
    })();
    // The declarations are fixed: a conflict is a bug caught by the tests.
    debug_assert!(declared.is_ok(), "{declared:?}");
    env
}
