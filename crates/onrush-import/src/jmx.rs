//! The JMX file as a tree of owned elements: JMeter's `hashTree` layout (an element followed by
//! the `<hashTree>` of its children) read into [`El`]s with their properties and their position
//! in the file. Nothing here knows what an element means.

use std::fmt;

/// A JMeter test element: `<ThreadGroup testclass=".." testname=".." enabled="..">` with its
/// properties, and the children from the `<hashTree>` that follows it.
#[derive(Debug, Clone)]
pub struct El {
    /// The XML tag (`HTTPSamplerProxy`, or a plugin's class name).
    pub tag: String,
    /// `testclass`, or the tag when there is none.
    pub class: String,
    /// `testname` (the name shown in JMeter's tree).
    pub name: String,
    pub enabled: bool,
    /// 1-based line and column of the element's start tag in its file.
    pub line: u32,
    pub col: u32,
    pub props: Vec<Prop>,
    pub children: Vec<El>,
    /// The file it comes from when not the plan itself (an Include Controller's file).
    pub file: Option<String>,
    /// What a Module or Include controller was resolved to.
    pub resolution: Option<crate::resolve::Resolution>,
}

/// A property: `<stringProp name="..">text</stringProp>`, or an `elementProp` /
/// `collectionProp` holding properties.
#[derive(Debug, Clone)]
pub struct Prop {
    pub name: String,
    /// `stringProp`, `boolProp`, `intProp`, `elementProp`, `collectionProp`, ...
    pub kind: String,
    pub value: String,
    /// `elementType` of an `elementProp`.
    pub element_type: String,
    pub children: Vec<Prop>,
}

/// The file is not well-formed XML, or not a JMeter plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JmxError {
    pub line: u32,
    pub col: u32,
    pub message: String,
}

impl fmt::Display for JmxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

impl std::error::Error for JmxError {}

/// Parses JMX text into its top-level elements (the children of the root `<hashTree>`).
pub fn parse(text: &str) -> Result<Vec<El>, JmxError> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, opts).map_err(|e| {
        let pos = e.pos();
        JmxError {
            line: pos.row,
            col: pos.col,
            message: format!("not well-formed XML: {e}"),
        }
    })?;
    let root = doc.root_element();
    if root.tag_name().name() != "jmeterTestPlan" {
        let pos = doc.text_pos_at(root.range().start);
        return Err(JmxError {
            line: pos.row,
            col: pos.col,
            message: format!(
                "the root element is <{}>; expected <jmeterTestPlan> (a JMeter .jmx file)",
                root.tag_name().name()
            ),
        });
    }
    let tree = root
        .children()
        .find(|n| n.is_element() && n.tag_name().name() == "hashTree");
    Ok(tree.map(|t| elements(&doc, t)).unwrap_or_default())
}

/// The elements of a `<hashTree>`: each element, then optionally its own `<hashTree>`.
fn elements(doc: &roxmltree::Document, tree: roxmltree::Node) -> Vec<El> {
    let mut out: Vec<El> = Vec::new();
    for node in tree.children().filter(|n| n.is_element()) {
        if node.tag_name().name() == "hashTree" {
            if let Some(last) = out.last_mut() {
                if last.children.is_empty() {
                    last.children = elements(doc, node);
                    continue;
                }
            }
            // A hashTree with no element before it: its elements belong here.
            out.extend(elements(doc, node));
            continue;
        }
        let pos = doc.text_pos_at(node.range().start);
        let tag = node.tag_name().name().to_string();
        out.push(El {
            class: node.attribute("testclass").unwrap_or(&tag).to_string(),
            name: node.attribute("testname").unwrap_or("").to_string(),
            enabled: node.attribute("enabled") != Some("false"),
            tag,
            line: pos.row,
            col: pos.col,
            props: props(node),
            children: Vec::new(),
            file: None,
            resolution: None,
        });
    }
    out
}

fn props(node: roxmltree::Node) -> Vec<Prop> {
    node.children()
        .filter(|n| n.is_element())
        .map(|n| {
            let kind = n.tag_name().name().to_string();
            // Old-style `<doubleProp><name>throughput</name><value>30.0</value></doubleProp>`.
            let child = |tag: &str| {
                n.children()
                    .find(|c| c.is_element() && c.tag_name().name() == tag)
                    .map(|c| c.text().unwrap_or("").to_string())
            };
            if n.attribute("name").is_none() {
                if let (Some(name), Some(value)) = (child("name"), child("value")) {
                    return Prop {
                        name,
                        kind,
                        value,
                        element_type: String::new(),
                        children: Vec::new(),
                    };
                }
            }
            let nested = matches!(kind.as_str(), "elementProp" | "collectionProp" | "objProp")
                || n.children().any(|c| c.is_element());
            Prop {
                name: n.attribute("name").unwrap_or("").to_string(),
                value: if nested {
                    String::new()
                } else {
                    n.text().unwrap_or("").to_string()
                },
                element_type: n.attribute("elementType").unwrap_or("").to_string(),
                children: if nested { props(n) } else { Vec::new() },
                kind,
            }
        })
        .collect()
}

/// Looks properties up by name; JMeter's old and new names are both tried by callers.
pub trait Props {
    fn props(&self) -> &[Prop];

    fn prop(&self, name: &str) -> Option<&Prop> {
        self.props().iter().find(|p| p.name == name)
    }
    /// The text of a simple property (empty when absent).
    fn s(&self, name: &str) -> &str {
        self.prop(name).map(|p| p.value.as_str()).unwrap_or("")
    }
    /// The text of the first of `names` that is present and not empty.
    fn s_any(&self, names: &[&str]) -> &str {
        names
            .iter()
            .map(|n| self.s(n))
            .find(|v| !v.trim().is_empty())
            .unwrap_or("")
    }
    fn b(&self, name: &str, default: bool) -> bool {
        match self.s(name).trim() {
            "true" => true,
            "false" => false,
            _ => default,
        }
    }
}

impl Props for El {
    fn props(&self) -> &[Prop] {
        &self.props
    }
}

impl Props for Prop {
    fn props(&self) -> &[Prop] {
        &self.children
    }
}

impl El {
    /// Where the element is, for messages: `line:col`.
    pub fn pos(&self) -> String {
        match &self.file {
            Some(f) => format!("{f}:{}:{}", self.line, self.col),
            None => format!("{}:{}", self.line, self.col),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_elements_their_children_and_properties() {
        let els = parse(
            r#"<?xml version="1.0"?>
<jmeterTestPlan version="1.2"><hashTree>
  <TestPlan testclass="TestPlan" testname="P" enabled="true">
    <elementProp name="TestPlan.user_defined_variables" elementType="Arguments">
      <collectionProp name="Arguments.arguments">
        <elementProp name="a" elementType="Argument"><stringProp name="Argument.value">1</stringProp></elementProp>
      </collectionProp>
    </elementProp>
  </TestPlan>
  <hashTree>
    <ThreadGroup testclass="ThreadGroup" testname="TG" enabled="false"/>
    <hashTree/>
  </hashTree>
</hashTree></jmeterTestPlan>"#,
        )
        .unwrap();
        assert_eq!(els.len(), 1);
        assert_eq!(els[0].class, "TestPlan");
        assert_eq!(els[0].line, 3);
        let udv = els[0].prop("TestPlan.user_defined_variables").unwrap();
        let arg = &udv.prop("Arguments.arguments").unwrap().children[0];
        assert_eq!(arg.s("Argument.value"), "1");
        assert_eq!(els[0].children[0].name, "TG");
        assert!(!els[0].children[0].enabled);
    }

    #[test]
    fn broken_xml_names_line_and_column() {
        let err = parse("<jmeterTestPlan>\n<hashTree>\n  <TestPlan testname=\"x>\n</hashTree>")
            .unwrap_err();
        assert!(err.line >= 3, "{err}");
        assert!(err
            .to_string()
            .starts_with(&format!("{}:{}:", err.line, err.col)));
        let err = parse("<html/>").unwrap_err();
        assert_eq!((err.line, err.col), (1, 1));
        assert!(err.message.contains("jmeterTestPlan"));
    }
}
