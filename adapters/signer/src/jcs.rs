//! RFC 8785 JSON Canonicalization Scheme.

use serde_json::Value;

/// The RFC 8785 (JCS) serialisation of `value`: no insignificant whitespace, object members
/// sorted by the UTF-16 code units of their names, strings with only the mandatory escapes
/// (`"`, `\`, and U+0000..U+001F, using `\b \t \n \f \r` where they exist, else lowercase
/// `\u00xx`), and every number written as ECMAScript's `Number.prototype.toString` writes the
/// IEEE 754 double nearest to it (so integers beyond 2^53 are rounded, exactly as a JavaScript
/// verifier would see them).
pub fn canonical_json(value: &Value) -> Vec<u8> {
    // A `serde_json::Value` can only hold finite numbers and string keys, which is all JCS can
    // fail on. (Under serde_json's `arbitrary_precision` feature, which this workspace does not
    // use, a number beyond the double range would make this panic.)
    serde_jcs::to_vec(value).expect("a serde_json::Value always has a JCS form")
}

/// The bytes an artifact's signature covers: the artifact with its `signature` member removed,
/// canonicalised. A value that is not an object is canonicalised as it is.
pub fn signing_bytes(artifact: &Value) -> Vec<u8> {
    match artifact {
        Value::Object(members) if members.contains_key("signature") => {
            let mut unsigned = members.clone();
            unsigned.remove("signature");
            canonical_json(&Value::Object(unsigned))
        }
        other => canonical_json(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn canon(value: &Value) -> String {
        String::from_utf8(canonical_json(value)).expect("JCS output is UTF-8")
    }

    fn canon_text(text: &str) -> String {
        canon(&serde_json::from_str(text).expect("test input is JSON"))
    }

    /// RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text. (The NaN and
    /// Infinity rows are errors in JCS and cannot be held by a `serde_json::Value` at all.)
    #[test]
    fn rfc8785_appendix_b_numbers() {
        let table: &[(u64, &str)] = &[
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ];
        for &(bits, expected) in table {
            let number = serde_json::Number::from_f64(f64::from_bits(bits)).expect("finite");
            assert_eq!(canon(&Value::Number(number)), expected, "{bits:#018x}");
        }
    }

    /// The same numbers written as JSON text, the way they arrive in a served artifact.
    #[test]
    fn numbers_from_text() {
        for (text, expected) in [
            ("1e21", "1e+21"),
            ("1E30", "1e+30"),
            ("1e-7", "1e-7"),
            ("0.000001", "0.000001"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("333333333.33333329", "333333333.3333333"),
            ("4.50", "4.5"),
            ("2e-3", "0.002"),
            ("0.000000000000000000000000001", "1e-27"),
            ("56.0", "56"),
            ("100", "100"),
            ("-17", "-17"),
            // Integers beyond 2^53 become the nearest double, as in ECMAScript.
            ("9007199254740993", "9007199254740992"),
            ("18446744073709551615", "18446744073709552000"),
            ("-9223372036854775808", "-9223372036854776000"),
        ] {
            assert_eq!(canon_text(text), expected, "{text}");
        }
    }

    /// RFC 8785 section 3.2.3's sorting example, plus `\ufb33` and a supplementary-plane
    /// character: U+1F600 sorts by its surrogates (0xD83D...), i.e. before U+FB33 even though
    /// its code point is larger. Sorting by UTF-8 bytes or by `char` would get this wrong.
    #[test]
    fn rfc8785_key_ordering() {
        let input = r#"{
            "\u20ac": "Euro Sign",
            "\r": "Carriage Return",
            "\ufb33": "Hebrew Letter Dalet With Dagesh",
            "1": "One",
            "\ud83d\ude00": "Emoji: Grinning Face",
            "\u0080": "Control",
            "\u00f6": "Latin Small Letter O With Diaeresis"
        }"#;
        let expected = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\
                        \"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\
                        \"\u{20ac}\":\"Euro Sign\",\"\u{1f600}\":\"Emoji: Grinning Face\",\
                        \"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}";
        assert_eq!(canon_text(input), expected);

        // Code-point (or UTF-8) order would put U+FB33 before U+1F600.
        let mut by_code_point = ["\u{fb33}", "\u{1f600}"];
        by_code_point.sort();
        assert_eq!(by_code_point, ["\u{fb33}", "\u{1f600}"]);
    }

    /// The test vectors of the reference implementation (cyberphone/json-canonicalization,
    /// `testdata/input` → `testdata/output`), which RFC 8785 cites.
    #[test]
    fn reference_test_vectors() {
        let cases: &[(&str, &str)] = &[
            (
                // arrays.json
                r#"[
                  56,
                  {
                    "d": true,
                    "10": null,
                    "1": [ ]
                  }
                ]"#,
                r#"[56,{"1":[],"10":null,"d":true}]"#,
            ),
            (
                // french.json
                r#"{
                  "peach": "This sorting order",
                  "péché": "is wrong according to French",
                  "pêche": "but canonicalization MUST",
                  "sin":   "ingnore locale"
                }"#,
                r#"{"peach":"This sorting order","péché":"is wrong according to French","pêche":"but canonicalization MUST","sin":"ingnore locale"}"#,
            ),
            (
                // structures.json
                r#"{
                  "1": {"f": {"f": "hi","F": 5} ,"\n": 56.0},
                  "10": { },
                  "": "empty",
                  "a": { },
                  "111": [ { } ],
                  "A": { }
                }"#,
                r#"{"":"empty","1":{"\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{}],"A":{},"a":{}}"#,
            ),
            (
                // unicode.json: no Unicode normalisation
                r#"{
                  "Unnormalized Unicode":"\u1e0d\u0307"
                }"#,
                "{\"Unnormalized Unicode\":\"\u{1e0d}\u{307}\"}",
            ),
            (
                // values.json
                r#"{
                  "numbers": [1E30, 4.50, 333333333.33333329, 2e-3, 0.000000000000000000000000001],
                  "escaping": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
                  "literals": [null, true, false]
                }"#,
                r#"{"escaping":"€$\u000f\nA'B\"\\\\\"/","literals":[null,true,false],"numbers":[1e+30,4.5,333333333.3333333,0.002,1e-27]}"#,
            ),
            (
                // weird.json
                r#"{
                  "\u20ac": "Euro Sign",
                  "1": "One",
                  "\u0080": "Control\u007f",
                  "\ud83d\ude02": "Smiley",
                  "\u00f6": "Latin Small Letter O With Diaeresis",
                  "\ufb33": "Hebrew Letter Dalet With Dagesh",
                  "</script>": "Browser Challenge"
                }"#,
                "{\"1\":\"One\",\"</script>\":\"Browser Challenge\",\"\u{80}\":\"Control\u{7f}\",\
                 \"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\
                 \"\u{1f602}\":\"Smiley\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(canon_text(input), *expected, "{input}");
        }
    }

    #[test]
    fn string_escaping_is_minimal() {
        let all_controls: String = (0u8..0x20).map(char::from).collect();
        assert_eq!(
            canon(&json!(all_controls)),
            "\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\
             \\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\
             \\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\""
        );
        // Not escaped: solidus, DEL, HTML-significant characters, the JavaScript line
        // terminators, non-ASCII.
        let plain = "/\u{7f}<>&'\u{2028}\u{2029}é€😀";
        assert_eq!(canon(&json!(plain)), format!("\"{plain}\""));
        assert_eq!(canon(&json!("\"\\")), r#""\"\\""#);
    }

    #[test]
    fn nested_values_and_literals() {
        let value = json!({"b": [1, {"z": null, "y": [true, false]}], "a": {"d": 1.5, "c": ""}});
        assert_eq!(
            canon(&value),
            r#"{"a":{"c":"","d":1.5},"b":[1,{"y":[true,false],"z":null}]}"#
        );
        assert_eq!(canon(&json!([])), "[]");
        assert_eq!(canon(&json!({})), "{}");
        assert_eq!(canon(&json!("x")), r#""x""#);
    }

    #[test]
    fn signing_bytes_drop_only_the_top_level_signature() {
        let artifact = json!({
            "b": 1,
            "signature": {"alg": "EdDSA", "kid": "k", "value": "v"},
            "evidence": {"signature": "kept: not the artifact's own"},
        });
        assert_eq!(
            String::from_utf8(signing_bytes(&artifact)).unwrap(),
            r#"{"b":1,"evidence":{"signature":"kept: not the artifact's own"}}"#
        );
        let unsigned = json!({"b": 1, "evidence": {"signature": "kept: not the artifact's own"}});
        assert_eq!(signing_bytes(&artifact), signing_bytes(&unsigned));
        assert_eq!(signing_bytes(&json!([1, 2])), b"[1,2]");
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let number = prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (proptest::num::f64::POSITIVE
                | proptest::num::f64::NEGATIVE
                | proptest::num::f64::NORMAL
                | proptest::num::f64::SUBNORMAL
                | proptest::num::f64::ZERO)
                .prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
                    .map(Value::Number)),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            number,
            any::<String>().prop_map(Value::String),
            "[\\x00-\\x1f\"\\\\/\u{7f}\u{2028}\u{e000}\u{fb33}\u{10000}\u{1f600}a-z]{0,8}"
                .prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..8)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Canonical JSON is a fixed point: parsing it and canonicalising again gives the same
        /// bytes, and so does any re-serialisation of the value (pretty-printed, reordered).
        #[test]
        fn canonical_json_is_idempotent(value in arb_json()) {
            let once = canonical_json(&value);
            let reparsed: Value = serde_json::from_slice(&once).expect("JCS output is JSON");
            prop_assert_eq!(&canonical_json(&reparsed), &once);

            let pretty = serde_json::to_string_pretty(&value).unwrap();
            let from_pretty: Value = serde_json::from_str(&pretty).unwrap();
            prop_assert_eq!(&canonical_json(&from_pretty), &once);
        }

        /// Member order never matters.
        #[test]
        fn member_order_is_irrelevant(members in prop::collection::vec((any::<String>(), any::<i32>()), 0..12)) {
            let forwards: String = format!(
                "{{{}}}",
                members.iter().map(|(k, v)| format!("{}:{v}", Value::from(k.as_str()))).collect::<Vec<_>>().join(",")
            );
            // Keep the last value for duplicate keys, as serde_json does, before reversing.
            let deduped: serde_json::Map<String, Value> =
                members.iter().map(|(k, v)| (k.clone(), Value::from(*v))).collect();
            let backwards: String = format!(
                "{{{}}}",
                deduped.iter().rev().map(|(k, v)| format!("{}:{v}", Value::from(k.as_str()))).collect::<Vec<_>>().join(",")
            );
            let a: Value = serde_json::from_str(&forwards).unwrap();
            let b: Value = serde_json::from_str(&backwards).unwrap();
            prop_assert_eq!(canonical_json(&a), canonical_json(&b));
        }
    }
}
