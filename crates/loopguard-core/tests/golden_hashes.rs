//! Literal digests for the tricky hashing cases.
//!
//! Every expected value below was produced by OpenClaw's own code (the parity sample in
//! `tests/fixtures/parity`, see its README), not by loopguard, so these tests pin
//! byte-compatibility rather than loopguard's current behaviour.

use loopguard_core::hashing::args_hash;
use loopguard_core::Value;
use loopguard_core::{hashing::hash_outcome, Hashing, Outcome};

fn args(tool: &str, json: &str) -> String {
    args_hash(tool, &Value::parse(json.as_bytes()).unwrap())
}

fn result(tool: &str, params: &str, json: &str) -> String {
    let p = Value::parse(params.as_bytes()).unwrap();
    let r = Value::parse(json.as_bytes()).unwrap();
    hash_outcome(
        tool.as_bytes(),
        &p,
        Outcome::Result(&r),
        &Hashing::default(),
    )
    .result_hash
    .unwrap()
    .to_string()
}

fn error(json: &str) -> String {
    let e = Value::parse(json.as_bytes()).unwrap();
    hash_outcome(
        b"probe",
        &Value::Null,
        Outcome::Error(&e),
        &Hashing::default(),
    )
    .result_hash
    .unwrap()
    .to_string()
}

#[test]
fn javascript_number_formatting() {
    let cases = [
        (
            r#"{"n":0}"#,
            "f3013f933b9fb80ab6d995e7ad9da36f683837ba1d81e950c943d40111eac2f0",
        ),
        (
            r#"{"n":-0}"#,
            "f3013f933b9fb80ab6d995e7ad9da36f683837ba1d81e950c943d40111eac2f0",
        ),
        (
            r#"{"n":1.0}"#,
            "2bfd14f43d17fc7cea24e0917a8879b4b2f880b8baeec1b9d90fbaad655e71bd",
        ),
        (
            r#"{"n":1.50}"#,
            "cb14d55cfe562fd6592d919f5dfacfa8708687b746a1d110c6dd5529c410e772",
        ),
        (
            r#"{"n":0.30000000000000004}"#,
            "1d8a8e16d9ee625f1fb5ef505413efa212cc020b272ed0f9b3d3d81acf593fde",
        ),
        (
            r#"{"n":1E2}"#,
            "b39022c4ed96525c42cd0e7ce55308533962a655f1c19d5dac2f03e9dd995b2c",
        ),
        (
            r#"{"n":1e21}"#,
            "f1ee2b60ee95a3170fdc07a577e5f3514ced26867443d69da265acadead81007",
        ),
        (
            r#"{"n":999999999999999999999}"#,
            "f1ee2b60ee95a3170fdc07a577e5f3514ced26867443d69da265acadead81007",
        ),
        (
            r#"{"n":1e-7}"#,
            "747d6d23b64d1b2d579adb832b44de31c91c875bbef7a8e397f5d183a746b54b",
        ),
        (
            r#"{"n":0.000001}"#,
            "28343867a0be00aee19f81aa90cfd6c646878b9303fa15410d16bfd3f8894578",
        ),
        (
            r#"{"n":-1.5E-10}"#,
            "df7614e1c53af5bd32eec0bf84db7772458b8d1fcdb4d442821630adb24c5e2d",
        ),
        (
            r#"{"n":123456789012345680000}"#,
            "372d7411af0dd3df2fd7d82a78dc0d0293ab61da9e4dee382c06b465ea859e93",
        ),
        (
            r#"{"n":9007199254740993}"#,
            "66c87d9cb3014e05a11baa97df62282d89d425f22ee15816577c84534e2ef1bb",
        ),
        (
            r#"{"n":18014398509481985}"#,
            "d1bc13b259c1076bb02a9cbfb8e79e28732d69628998d5a95aa8cc67626997dc",
        ),
        (
            r#"{"n":123456789012345678901234567890}"#,
            "cf06dd17e5dab029d1ab4c04f5941d7d69ac37a3421b0fc460c48e032b2a94e7",
        ),
        (
            r#"{"n":5e-324}"#,
            "cf4df7d2834198d284947133d3ec7a66f3d94e8d447cac6a0783324211b36d43",
        ),
        (
            r#"{"n":1.7976931348623157e308}"#,
            "9599e0f9672bfa5d654b432fa5f9b7ee04f35c607b3a3ff01ce97b070f8f2648",
        ),
        (
            r#"{"n":4.35}"#,
            "4d4a0a5dafca032c6c56fb114ae533760af098410e30de3bd2c3f49527fc16ab",
        ),
        (
            r#"{"n":2.5e-5}"#,
            "f6224c6f98859825042fd77b1372269b5f75c0fe37b988ffc29ba1a6264fc4e0",
        ),
        (
            r#"{"n":12345678.9}"#,
            "0864a42f434706a2b31667b3e7fd1c7b2d09786ea35e0c75e492e31f5c56e609",
        ),
        (
            r#"{"n":1e400}"#,
            "398fe8fb909e462a0316109d45bf37983562b6f0b2415772f1f65bb03ee6e488",
        ),
        (
            r#"{"n":-1e400}"#,
            "2a1a5817e642d316db7d0867b57ec70c96e81de15c2467ea0a9f2762f576182b",
        ),
        (
            r#"{"n":-1e-400}"#,
            "f3013f933b9fb80ab6d995e7ad9da36f683837ba1d81e950c943d40111eac2f0",
        ),
        (
            r#"[1e21,{"k":1e21}]"#,
            "2726aae4ff09052e68cce87c6763af13fb0dc12010d07ac124b2e411f579e585",
        ),
        (
            r#"[9007199254740993,{"k":9007199254740993}]"#,
            "79883b3690a84ffdee9953e99097e15d591b935db30a88e54fb743ac5d521e1f",
        ),
    ];
    for (json, hex) in cases {
        assert_eq!(args("calc", json), format!("calc:{hex}"), "{json}");
    }
}

#[test]
fn keys_sort_by_utf16_code_units() {
    let cases = [
        (
            r#"{"b":2,"a":1}"#,
            "43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777",
        ),
        (
            r#"{"😀":2,"\ue000":1}"#,
            "28c95d1bbb2209223307e62f489020e8f9e0cfa16adf2daf6d88127a1e8dd22a",
        ),
        (
            r#"{"\uffff":1,"𐀀":2,"\ud7ff":3,"z":4}"#,
            "dddc1e2e6913d9540fbe3e734e77758370990edf01bef370fa2c28fbdea47a53",
        ),
        (
            r#"{"B":1,"a":2,"_":3,"é":4,"e":5,"":6,"10":7,"9":8,"1":9}"#,
            "bee5ce14af8ee495f9fa485a344c09acbb07b55b2d7b49054ea51b61fcceb7e4",
        ),
        (
            r#"{"ﬀ":1,"𝔸":2,"\ufb00x":3}"#,
            "c661a351e82258609e3023e223ffbf060a77b4ecde65253af5fe468210fff23b",
        ),
        (
            r#"{"dup":1,"dup":2}"#,
            "65c9cbc507398dd4e40d498eefbe8622b42a923d68561315cd9d56bc2eda02b5",
        ),
    ];
    for (json, hex) in cases {
        assert_eq!(args("k", json), format!("k:{hex}"), "{json}");
    }
    assert_eq!(
        args("日本語", r#"{"キー":"値","😀":"😀"}"#),
        "日本語:334c15771369eaca78dd32d7660a2e8ffa7bdf7af39ff991d8e4bcf78ab69784"
    );
}

#[test]
fn result_shapes() {
    let p = r#"{"q":1}"#;
    let cases = [
        (
            r#""plain string""#,
            "100e95befce5c34a8927f2359d07d340222625dd67a32ea9c96031c7f9b5f74a",
        ),
        (
            "42",
            "73475cb40a568e8da8a045ced110137e159f890ac4da883b6b17dc651b3a8049",
        ),
        (
            "[1,2]",
            "49a64717d5d4cb19952e6eac2946415cf6879adacf9908e7d872332d32c6e684",
        ),
        (
            "null",
            "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b",
        ),
        (
            "true",
            "b5bea41b6c623f7c09f1bf24dcae58ebab3c0cdd90ad966bc43a45b44867e12b",
        ),
        (
            "{}",
            "d945f533f0d17914232880903bfb9369d59cd75ef12afe84c409d1fb88e9b775",
        ),
        (
            r#"{"details":{"a":1}}"#,
            "fb03876c2a6d7f5a93072e06c1d910dd692fb6246a73b72dfa9a07cc73ccdd10",
        ),
        (
            r#"{"content":[{"type":"text","text":"a"},{"type":"image","data":"x"},{"type":"text","text":"b"},{"text":"no type"},{"type":1,"text":"bad type"},"str",null,{"type":"text","text":5}]}"#,
            "41107f7dffc527f5a466eefabdec4b52c387146b3c499ad67696ddcd67bbfcd0",
        ),
        (
            r#"{"content":[{"type":"text","text":"  \ufeff a\nb  \u3000  \t\u000b\f\r\n"}]}"#,
            "41107f7dffc527f5a466eefabdec4b52c387146b3c499ad67696ddcd67bbfcd0",
        ),
        (
            r#"{"content":[{"type":"text","text":"a\u180e"}]}"#,
            "92eb23b901fa5474b1fd32476b52d0a7f59b59069a62c4da968ae24d2e3b7ca4",
        ),
        (
            r#"{"content":{"type":"text","text":"not array"}}"#,
            "d945f533f0d17914232880903bfb9369d59cd75ef12afe84c409d1fb88e9b775",
        ),
        (
            r#"{"content":[{"type":"text","text":"x"}],"details":[1]}"#,
            "b14081d3f7073d75411d2f21c1c82f5c788b306000ab668a0869963c9847ffcb",
        ),
        (
            r#"{"details":{"x":[1e21,-0,0.1,9007199254740993]}}"#,
            "e3f1a3245130ea1130f760d9093780c3e58399038ef0ab5474335b27793ec20c",
        ),
    ];
    for (json, hex) in cases {
        assert_eq!(result("probe", p, json), hex, "{json}");
    }
    assert_eq!(
        result(
            "exec",
            r#"{"n":1}"#,
            r#"{"details":{"status":"completed","exitCode":1e400}}"#
        ),
        "0d811094abb447d720f890289770321b36a84ed5aedde4e75b7afce28512db74"
    );
}

#[test]
fn error_shapes() {
    let cases = [
        (
            r#""boom""#,
            "20b9458ca349a629a028ec64e716294abd767b0059bd4adb6ec0ea4fcf766725",
        ),
        (
            r#""""#,
            "12ae32cb1ec02d01eda3581b127c1fee3b0dc53572ed6baf239721a03d82e126",
        ),
        (
            r#""  ""#,
            "45d3802841073555f515b78291b24a513eae893f2729436ffb93951b0b3b80bf",
        ),
        (
            "0",
            "98089e6d36f78e9766c9ea34d5acb3611f3a92cd81c5eb102095d924ffc7d08b",
        ),
        (
            "-0",
            "98089e6d36f78e9766c9ea34d5acb3611f3a92cd81c5eb102095d924ffc7d08b",
        ),
        (
            "1.5",
            "24c74279834561bd8e2846f7eebd4a3cd158413fcf88c604c081cd040d871614",
        ),
        (
            "1e21",
            "be7e7e87a71d8d1af5799a8ee4a1f0f1d8d0bab57ddede32556a22d537406469",
        ),
        (
            "1e-7",
            "80e4aa4e2b0369c65b0a139716cf53f866698aac425c3694f4080379c4ba4c8e",
        ),
        (
            "1e400",
            "f7240e746ae2e77280b7be8fcc04173492ee07cc820e3120431900a3449e71a3",
        ),
        (
            "true",
            "18d10c7d2b4b04aaf04254d1ae5d655a5dc0407cbcdd5a8c3986e985370f36ee",
        ),
        (
            "false",
            "076de6e730df0b4c3860877a0f619c6ac11f8aefd78313ac793a2a703c026869",
        ),
        (
            "null",
            "f072cbec3bf8841871d4284230c5e983dc211a56837aed862487148f947d1a1f",
        ),
        (
            r#"{"message":"m","code":5}"#,
            "b25f9829469fe3277ce5525eb6f232fdf256071ac574dd16f2be92e85d7e9323",
        ),
        (
            r#"{"b":1,"a":2}"#,
            "00fa64e179bead0f72ccea57b87841afdb084cf876d1cbfaaacce548823f4b18",
        ),
        (
            r#"["x",1]"#,
            "e85af9289f2b27a288eadb3674d0591e4e6b082dfecb25b5f0eb79f1fc3b0afd",
        ),
        (
            r#""Tool x not found""#,
            "267b5f10b2b55a8ea3d1ddb720669845a4ef74e3af05955b8093d9f48404a29d",
        ),
    ];
    for (json, hex) in cases {
        assert_eq!(error(json), format!("error:{hex}"), "{json}");
    }
}
