//! Kubernetes' library functions ([`super::super::library`], [`super::super::net`]).

use serde_json::json;

use super::{compile, TestResult};

/// validation_test.go "stdlib list functions", "stdlib regex functions",
/// "URL parsing" (isURL) and "IP and CIDR" (isIP), for the types this
/// module evaluates.
#[test]
fn upstream_library_cases() -> TestResult {
    let schema = json!({"type": "object", "properties": {
        "ints": {"type": "array", "items": {"type": "integer"}},
        "unsortedInts": {"type": "array", "items": {"type": "integer"}},
        "emptyInts": {"type": "array", "items": {"type": "integer"}},
        "doubles": {"type": "array", "items": {"type": "number"}},
        "strings": {"type": "array", "items": {"type": "string"}},
        "objs": {"type": "array", "items": {"type": "object", "properties": {"f1": {"type": "string"}, "f2": {"type": "string"}}}},
        "str": {"type": "string"},
    }});
    let object = json!({
        "ints": [1, 2, 2, 3], "unsortedInts": [2, 1], "emptyInts": [],
        "doubles": [1, 2, 2, 3], "strings": ["a", "b", "b", "c"],
        "objs": [{"f1": "a", "f2": "a"}, {"f1": "a", "f2": "b"}, {"f1": "a", "f2": "b"}, {"f1": "a", "f2": "c"}],
        "str": "this is a 123 string 456",
    });
    let valid = [
        "self.ints.sum() == 8",
        "self.ints.min() == 1",
        "self.ints.max() == 3",
        "self.emptyInts.sum() == 0",
        "self.ints.isSorted()",
        "self.emptyInts.isSorted()",
        "self.unsortedInts.isSorted() == false",
        "self.ints.indexOf(2) == 1",
        "self.ints.lastIndexOf(2) == 2",
        "self.ints.indexOf(10) == -1",
        "self.doubles.sum() == 8.0",
        "self.doubles.min() == 1.0",
        "self.doubles.max() == 3.0",
        "self.doubles.indexOf(2.0) == 1",
        "self.strings.min() == 'a'",
        "self.strings.max() == 'c'",
        "self.strings.isSorted()",
        "self.strings.indexOf('b') == 1",
        "self.strings.lastIndexOf('b') == 2",
        "[[1], [2]].indexOf([1]) == 0",
        "[{'a': 1}, {'b': 2}].lastIndexOf({'b': 2}) == 1",
        "self.objs.indexOf(self.objs[1]) == 1",
        "self.objs.lastIndexOf(self.objs[1]) == 2",
        "([0] + self.emptyInts).min() == 0",
        "[].sum() == 0",
        "self.str.find('[0-9]+') == '123'",
        "self.str.find('xyz') == ''",
        "self.str.findAll('[0-9]+') == ['123', '456']",
        "self.str.findAll('[0-9]+', 0) == []",
        "self.str.findAll('[0-9]+', 1) == ['123']",
        "self.str.findAll('[0-9]+', -1) == ['123', '456']",
        "isURL('https://user:pass@example.com:80/path?query=val#fragment')",
        "isURL('/path') == true",
        "isURL('https://a:b:c/') == false",
        "isURL('../relative-path') == false",
        "isIP('192.168.0.1')",
        "!isIP('192.168.0.1/24')",
        "isCIDR('192.168.0.0/24')",
        "!isCIDR('192.168.0.1')",
        "'TacoCat'.lowerAscii() == 'tacocat'",
        "'TacoCat'.upperAscii() == 'TACOCAT'",
        "'a,b'.split(',') == ['a', 'b']",
        "['a', 'b'].join('-') == 'a-b'",
        "'abc'.indexOf('c') == 2",
        "'abca'.lastIndexOf('a') == 3",
        "'aa'.replace('a', 'b') == 'bb'",
        "' x '.trim() == 'x'",
        "sets.contains([1, 2, 3], [2])",
        "sets.equivalent([1, 2], [2, 1, 1])",
        "!sets.intersects([1], [2])",
        "self.ints.exists_one(i, i == 3)",
        "self.ints.map(i, i * 2) == [2, 4, 4, 6]",
        "self.ints.filter(i, i > 1).size() == 3",
        "size(self.str) > 3",
        "self.str.contains('123')",
        "self.str.endsWith('456')",
        "string(1) == '1'",
        "int('2') == 2",
    ];
    for rule in valid {
        let mut schema = schema.clone();
        schema["x-kubernetes-validations"] = json!([{"rule": rule}]);
        assert_eq!(compile(schema)?.validate(&object, None), vec![], "{rule}");
    }
    let mut schema = schema.clone();
    schema["x-kubernetes-validations"] = json!([{"rule": "self.emptyInts.min() == 1"}]);
    let errors = compile(schema)?.validate(&object, None);
    assert!(
        errors.len() == 1 && errors[0].1.contains("min called on empty list"),
        "{errors:?}"
    );
    Ok(())
}
