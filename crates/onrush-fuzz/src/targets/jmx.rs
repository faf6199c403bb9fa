//! The JMeter importer (`onrush import jmx`): the input as a `.jmx` file, converted; the plan
//! it writes is then loaded like any plan (the importer's output is outside input to the
//! loader too, and must not crash it either).

use onrush_import::{import_jmx, Options};

pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let options = Options {
        // Include Controller and CSV files are looked up here: a folder that does not exist,
        // so that no run reads the machine's files.
        base_dir: "/nonexistent-onrush-fuzz".into(),
        source_name: "fuzz.jmx".into(),
        plan_dir: None,
        // The JavaScript a JSR223 element becomes is checked by the plan's loader below.
        ..Options::default()
    };
    if let Ok(import) = import_jmx(&text, &options) {
        let _ = super::plan::load(&import.yaml);
    }
}

pub const DICT: &[&[u8]] = &[
    b"<jmeterTestPlan version=\"1.2\">",
    b"</jmeterTestPlan>",
    b"<hashTree>",
    b"</hashTree>",
    b"<hashTree/>",
    b"<TestPlan testname=\"t\">",
    b"</TestPlan>",
    b"<ThreadGroup testname=\"g\">",
    b"</ThreadGroup>",
    b"<HTTPSamplerProxy testname=\"s\">",
    b"</HTTPSamplerProxy>",
    b"<stringProp name=\"HTTPSampler.path\">",
    b"<stringProp name=\"HTTPSampler.method\">",
    b"<stringProp name=\"HTTPSampler.domain\">",
    b"<stringProp name=\"ThreadGroup.num_threads\">",
    b"<stringProp name=\"LoopController.loops\">",
    b"</stringProp>",
    b"<boolProp name=\"x\">",
    b"</boolProp>",
    b"<elementProp name=\"x\" elementType=\"Arguments\">",
    b"</elementProp>",
    b"<collectionProp name=\"Arguments.arguments\">",
    b"</collectionProp>",
    b"${__P(x,1)}",
    b"${x}",
    b"${__Random(1,9)}",
    b"<RegexExtractor>",
    b"<JSONPostProcessor>",
    b"<CSVDataSet>",
    b"<IfController>",
    b"<LoopController>",
    b"<TransactionController>",
    b"<ConstantTimer>",
    b"<ResponseAssertion>",
    b"<HeaderManager>",
    b"<CookieManager/>",
    b"&amp;",
    b"&#x0;",
    b"<![CDATA[",
    b"]]>",
    b"enabled=\"false\"",
    b"-1",
    b"99999999999",
];
