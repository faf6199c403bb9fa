//! Converts Apache JMeter `.jmx` plans into onrush plans (`onrush import jmx`); browser
//! recordings ([`har`], `onrush import har`) and pasted curl commands ([`curl`], `onrush import
//! curl`) into plans or steps.
//!
//! JMeter:
//!
//! The JMX is read into a tree ([`jmx`]), Module and Include controllers are resolved *before*
//! disabled elements are pruned ([`resolve`]: JMeter saves Test Fragments disabled), elements
//! saved without a name get one from their place in the tree (`naming`), and the tree
//! is walked with JMeter's scoping rules (config elements, timers, assertions and extractors apply
//! to the samplers of their parent and below) into a plan ([`yaml`], written with comments) and a
//! [`Report`] that says, for every element, whether it was converted, approximated (how) or not
//! converted (why, and what to do). An element the importer does not know — a plugin, a newer
//! JMeter class — is reported, never fatal; only a file that is not well-formed XML or not a
//! JMeter plan is an error ([`JmxError`], with its line and column).
//!
//! ```
//! let jmx = r#"<jmeterTestPlan><hashTree>
//!   <TestPlan testclass="TestPlan" testname="Plan"/><hashTree>
//!     <ThreadGroup testclass="ThreadGroup" testname="Users">
//!       <stringProp name="ThreadGroup.num_threads">2</stringProp>
//!       <elementProp name="ThreadGroup.main_controller" elementType="LoopController">
//!         <stringProp name="LoopController.loops">3</stringProp>
//!       </elementProp>
//!     </ThreadGroup><hashTree>
//!       <HTTPSamplerProxy testclass="HTTPSamplerProxy" testname="home">
//!         <stringProp name="HTTPSampler.domain">example.test</stringProp>
//!         <stringProp name="HTTPSampler.path">/</stringProp>
//!         <stringProp name="HTTPSampler.method">GET</stringProp>
//!       </HTTPSamplerProxy><hashTree/>
//!     </hashTree>
//!   </hashTree>
//! </hashTree></jmeterTestPlan>"#;
//! let out = onrush_import::import_jmx(jmx, &onrush_import::Options::default()).unwrap();
//! assert!(out.yaml.contains("target: \"http://example.test\""));
//! assert!(!out.report.has_not_converted());
//! ```

mod convert;
pub mod curl;
mod groovy;
pub mod har;
pub mod jmx;
mod naming;
mod report;
pub mod resolve;
mod template;
pub mod yaml;

use std::path::PathBuf;

pub use jmx::JmxError;
pub use report::{Entry, Report, Status};

/// Where the JMX comes from.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The JMX file's folder: Include Controller files and CSV files are looked up there.
    pub base_dir: PathBuf,
    /// The JMX file name, for the plan's header comment.
    pub source_name: String,
    /// Where the plan will be written, when not beside the JMX: relative data-file paths are
    /// then written as absolute paths into `base_dir` (JMeter resolves them against the JMX).
    pub plan_dir: Option<PathBuf>,
    /// The file name of the JavaScript module that converted JSR223/BeanShell scripts go to,
    /// beside the plan; empty for `jmeter_scripts.js`.
    pub script_file: String,
    /// Checks that a converted script's JavaScript parses (`Err` says where and why); a script
    /// that does not is reported as not converted. The `onrush` binary passes its engine's
    /// parser; without one, the plan's loader finds a mistake (`onrush validate`).
    pub check_js: Option<CheckJs>,
}

/// A parser's check of a JavaScript function's text: `Err` says where and why it fails.
pub type CheckJs = fn(&str) -> Result<(), String>;

impl Options {
    /// The script module's file name.
    pub fn script_file_name(&self) -> &str {
        if self.script_file.is_empty() {
            "jmeter_scripts.js"
        } else {
            &self.script_file
        }
    }
}

/// The JavaScript module of the converted JSR223/BeanShell scripts, to write beside the plan
/// (its `scripts:` names it).
#[derive(Debug, Clone)]
pub struct ScriptModule {
    /// The file name ([`Options::script_file_name`]).
    pub file: String,
    pub source: String,
}

/// A file the plan names (a CSV feeder, a request body or upload), relative to the plan as
/// JMeter names it relative to the JMX. onrush checks that these exist when the plan loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    /// The path written in the plan (it may hold `${var}` of plan variables).
    pub path: String,
    /// The path with the plan variables' default values filled in (relative to the plan).
    pub default_path: String,
    /// For a CSV feeder: the column names the plan expects in its header line (JMeter's
    /// `variableNames`); empty for other files.
    pub columns: Vec<String>,
}

/// What [`import_jmx`] produces.
#[derive(Debug, Clone)]
pub struct Import {
    /// The onrush plan, YAML with comments.
    pub yaml: String,
    pub report: Report,
    /// Files the plan refers to.
    pub data_files: Vec<DataFile>,
    /// The converted scripts, when any converted.
    pub script: Option<ScriptModule>,
}

/// Converts JMX text into an onrush plan and a conversion report.
pub fn import_jmx(text: &str, options: &Options) -> Result<Import, JmxError> {
    let mut els = jmx::parse(text)?;
    resolve::resolve(&mut els, &options.base_dir);
    naming::name_unnamed(&mut els);
    Ok(convert::convert(&els, options))
}
