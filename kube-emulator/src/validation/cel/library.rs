//! Kubernetes' CEL library functions on lists and strings: a port of
//! `apiserver/pkg/cel/library/lists.go` (`isSorted`, `sum`, `min`, `max`,
//! `indexOf`, `lastIndexOf`) and `regex.go` (`find`, `findAll`), plus
//! cel-go's `ext/sets.go` (`sets.contains`, `sets.equivalent`,
//! `sets.intersects`), and the argument helpers the functions share.

use std::sync::Arc;

use cel::common::value::CowVal;
use cel::{ExecutionError, Value};

pub(super) type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
pub(super) type Out<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

fn arg(args: &Args<'_, '_>, i: usize) -> Result<Value, ExecutionError> {
    let v = args
        .get(i)
        .ok_or_else(|| ExecutionError::invalid_argument_count(i + 1, args.len()))?;
    Value::try_from(v.as_ref())
}

pub(super) fn out<'b, 'v>(value: Value) -> Out<'b, 'v> {
    let boxed: Box<dyn cel::common::value::Val> = value.try_into()?;
    Ok(CowVal::Owned(boxed))
}

fn list_arg(args: &Args<'_, '_>, i: usize, function: &str) -> Result<Arc<Vec<Value>>, ExecutionError> {
    match arg(args, i)? {
        Value::List(list) => Ok(list),
        other => Err(ExecutionError::function_error(
            function,
            format!("expected a list, got {}", other.type_of()),
        )),
    }
}

pub(super) fn string_arg(args: &Args<'_, '_>, i: usize, function: &str) -> Result<Arc<String>, ExecutionError> {
    match arg(args, i)? {
        Value::String(s) => Ok(s),
        other => Err(ExecutionError::function_error(
            function,
            format!("expected a string, got {}", other.type_of()),
        )),
    }
}

/// Orders two comparable values (`lists.go` accepts comparable elements only).
fn compare(a: &Value, b: &Value, function: &str) -> Result<std::cmp::Ordering, ExecutionError> {
    use std::cmp::Ordering;
    let ordering = match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::UInt(x), Value::UInt(y)) => Some(x.cmp(y)),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y),
        (Value::Int(x), Value::Float(y)) => (*x as f64).partial_cmp(y),
        (Value::Float(x), Value::Int(y)) => x.partial_cmp(&(*y as f64)),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        _ => None,
    };
    ordering.map_or_else(
        || match (a, b) {
            (Value::Float(_), _) | (_, Value::Float(_)) => Ok(Ordering::Equal), // NaN
            _ => Err(ExecutionError::no_such_member_overload(
                function,
                vec![format!("{:?}", a.type_of()), format!("{:?}", b.type_of())],
            )),
        },
        Ok,
    )
}

pub(super) fn list_is_sorted<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let list = list_arg(&args, 0, "isSorted")?;
    for pair in list.windows(2) {
        if compare(&pair[0], &pair[1], "isSorted")? == std::cmp::Ordering::Greater {
            return out(Value::Bool(false));
        }
    }
    out(Value::Bool(true))
}

pub(super) fn list_sum<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let list = list_arg(&args, 0, "sum")?;
    let mut total = match list.first() {
        None | Some(Value::Int(_)) => Value::Int(0),
        Some(Value::UInt(_)) => Value::UInt(0),
        Some(Value::Float(_)) => Value::Float(0.0),
        Some(other) => {
            return Err(ExecutionError::no_such_member_overload(
                "sum",
                vec![format!("list({:?})", other.type_of())],
            ));
        }
    };
    for v in list.iter() {
        total = match (&total, v) {
            (Value::Int(a), Value::Int(b)) => Value::Int(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?,
            ),
            (Value::UInt(a), Value::UInt(b)) => Value::UInt(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "unsigned integer overflow"))?,
            ),
            (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
            _ => {
                return Err(ExecutionError::no_such_member_overload(
                    "sum",
                    vec![format!("{:?}", v.type_of())],
                ));
            }
        };
    }
    out(total)
}

fn extreme<'b, 'v>(args: Args<'b, 'v>, function: &str, keep: std::cmp::Ordering) -> Out<'b, 'v> {
    let list = list_arg(&args, 0, function)?;
    let mut best = list
        .first()
        .ok_or_else(|| ExecutionError::function_error(function, format!("{function} called on empty list")))?;
    for v in list.iter().skip(1) {
        if compare(v, best, function)? == keep {
            best = v;
        }
    }
    out(best.clone())
}

pub(super) fn list_min<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    extreme(args, "min", std::cmp::Ordering::Less)
}

pub(super) fn list_max<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    extreme(args, "max", std::cmp::Ordering::Greater)
}

fn cel_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Float(y)) | (Value::Float(y), Value::Int(x)) => (*x as f64) == *y,
        (Value::Int(x), Value::UInt(y)) | (Value::UInt(y), Value::Int(x)) => u64::try_from(*x).is_ok_and(|x| x == *y),
        _ => a == b,
    }
}

pub(super) fn list_index_of<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let list = list_arg(&args, 0, "indexOf")?;
    let needle = arg(&args, 1)?;
    let i = list.iter().position(|v| cel_equal(v, &needle));
    out(Value::Int(i.map_or(-1, |i| i as i64)))
}

pub(super) fn list_last_index_of<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let list = list_arg(&args, 0, "lastIndexOf")?;
    let needle = arg(&args, 1)?;
    let i = list.iter().rposition(|v| cel_equal(v, &needle));
    out(Value::Int(i.map_or(-1, |i| i as i64)))
}

fn regex(pattern: &str, function: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern).map_err(|e| ExecutionError::function_error(function, e))
}

pub(super) fn string_find<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let s = string_arg(&args, 0, "find")?;
    let re = regex(&string_arg(&args, 1, "find")?, "find")?;
    out(Value::String(Arc::new(
        re.find(&s).map(|m| m.as_str().to_string()).unwrap_or_default(),
    )))
}

pub(super) fn string_find_all<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let s = string_arg(&args, 0, "findAll")?;
    let re = regex(&string_arg(&args, 1, "findAll")?, "findAll")?;
    let limit = match args.len() {
        3 => match arg(&args, 2)? {
            Value::Int(n) => n,
            _ => -1,
        },
        _ => -1,
    };
    let matches: Vec<Value> = if limit == 0 {
        Vec::new()
    } else {
        let all = re
            .find_iter(&s)
            .map(|m| Value::String(Arc::new(m.as_str().to_string())));
        if limit < 0 {
            all.collect()
        } else {
            all.take(limit as usize).collect()
        }
    };
    out(Value::List(Arc::new(matches)))
}

pub(super) fn sets_contains<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let a = list_arg(&args, 0, "sets.contains")?;
    let b = list_arg(&args, 1, "sets.contains")?;
    out(Value::Bool(b.iter().all(|x| a.iter().any(|y| cel_equal(x, y)))))
}

pub(super) fn sets_equivalent<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let a = list_arg(&args, 0, "sets.equivalent")?;
    let b = list_arg(&args, 1, "sets.equivalent")?;
    let within = |a: &[Value], b: &[Value]| a.iter().all(|x| b.iter().any(|y| cel_equal(x, y)));
    out(Value::Bool(within(&a, &b) && within(&b, &a)))
}

pub(super) fn sets_intersects<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let a = list_arg(&args, 0, "sets.intersects")?;
    let b = list_arg(&args, 1, "sets.intersects")?;
    out(Value::Bool(a.iter().any(|x| b.iter().any(|y| cel_equal(x, y)))))
}
