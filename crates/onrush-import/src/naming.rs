//! Names for elements saved with an empty name. JMeter runs them (their samples are labelled
//! ""), but an onrush step, group or scenario needs a name: metrics are kept per name. An
//! HTTP sampler is named after its request (`GET /items/{id}`: the path without its query,
//! variables in braces); any other
//! element after its place in the tree (`Users / TransactionController`), numbered when
//! siblings would share the name.

use std::collections::HashMap;

use crate::jmx::{El, Props};

/// Names every unnamed element of the tree `els` (after modules and includes are resolved, so
/// that copies are named where they run).
pub fn name_unnamed(els: &mut [El]) {
    name_level(els, "");
}

fn name_level(els: &mut [El], parent: &str) {
    let mut taken: HashMap<String, usize> = HashMap::new();
    for el in els.iter() {
        *taken.entry(el.name.trim().to_string()).or_default() += 1;
    }
    for el in els.iter_mut() {
        if el.name.trim().is_empty() {
            let base = derived_name(el, parent);
            let mut name = base.clone();
            let mut n = 1;
            while taken.contains_key(&name) {
                n += 1;
                name = format!("{base} {n}");
            }
            taken.insert(name.clone(), 1);
            el.name = name;
        }
        let path = el.name.clone();
        name_level(&mut el.children, &path);
    }
}

fn derived_name(el: &El, parent: &str) -> String {
    if matches!(
        el.class.as_str(),
        "HTTPSamplerProxy" | "HTTPSampler" | "HTTPSampler2"
    ) {
        let method = match el.s("HTTPSampler.method").trim() {
            "" => "GET".to_string(),
            m => m.to_ascii_uppercase(),
        };
        // The path without its query, `${x}` as `{x}`: a stable metric name, no template.
        let path = el.s("HTTPSampler.path").trim();
        let path = path.split('?').next().unwrap_or("").replace("${", "{");
        let path = if path.is_empty() { "/".into() } else { path };
        return format!("{method} {path}");
    }
    if el.class == "TestPlan" {
        return "Test Plan".into();
    }
    if parent.is_empty() {
        el.class.clone()
    } else {
        format!("{parent} / {}", el.class)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unnamed_elements_are_named_after_their_place() {
        let jmx = r#"<jmeterTestPlan><hashTree>
          <TestPlan testclass="TestPlan" testname="Plan"/><hashTree>
            <ThreadGroup testclass="ThreadGroup" testname="Users"/><hashTree>
              <HTTPSamplerProxy testclass="HTTPSamplerProxy" testname="">
                <stringProp name="HTTPSampler.path">/items/${id}?x=1</stringProp>
                <stringProp name="HTTPSampler.method">post</stringProp>
              </HTTPSamplerProxy><hashTree/>
              <TransactionController testclass="TransactionController" testname=""/><hashTree/>
              <TransactionController testclass="TransactionController" testname=" "/><hashTree/>
            </hashTree>
          </hashTree>
        </hashTree></jmeterTestPlan>"#;
        let mut els = crate::jmx::parse(jmx).unwrap();
        name_unnamed(&mut els);
        let names: Vec<&str> = els[0].children[0]
            .children
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "POST /items/{id}",
                "Users / TransactionController",
                "Users / TransactionController 2"
            ]
        );
    }
}
