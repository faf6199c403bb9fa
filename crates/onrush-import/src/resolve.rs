//! Module and Include controllers replaced by what they run, *before* disabled elements are
//! pruned: JMeter saves every Test Fragment as disabled, and a Module Controller runs it all the
//! same, so a converter that prunes first loses everything reached through fragments.

use std::path::Path;

use crate::jmx::{self, El, Props};

/// What a Module or Include controller was resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Its target was found: what it runs.
    Resolved(String),
    /// Its target was found, but not where its path says: what it runs, and how it was found.
    Approximated(String),
    /// Nothing to run: why, and what to do.
    Unresolved(String),
}

/// How deep modules and includes may nest (a module that reaches itself stops here).
const MAX_DEPTH: usize = 8;

/// Resolves every Module and Include controller in `els` (the whole plan). `base_dir` is where
/// relative include paths are looked up (the JMX file's folder).
pub fn resolve(els: &mut [El], base_dir: &Path) {
    let root: Vec<El> = els.to_vec();
    walk(els, &root, base_dir, 0);
}

fn walk(els: &mut [El], root: &[El], base_dir: &Path, depth: usize) {
    for el in els.iter_mut() {
        match el.class.as_str() {
            "ModuleController" => module(el, root, base_dir, depth),
            "IncludeController" => include(el, base_dir, depth),
            _ => walk(&mut el.children, root, base_dir, depth),
        }
    }
}

fn module(el: &mut El, root: &[El], base_dir: &Path, depth: usize) {
    let path: Vec<String> = el
        .prop("ModuleController.node_path")
        .map(|p| p.children.iter().map(|c| c.value.clone()).collect())
        .unwrap_or_default();
    if depth >= MAX_DEPTH {
        el.resolution = Some(Resolution::Unresolved(format!(
            "modules nest deeper than {MAX_DEPTH} levels (a module that reaches itself?); not followed"
        )));
        return;
    }
    if path.is_empty() {
        el.resolution = Some(Resolution::Unresolved(
            "no target selected in the Module Controller: nothing to run".into(),
        ));
        return;
    }
    let (target, renamed) = match find(root, &path) {
        Some(target) => (target, None),
        None => match find_in_renamed_plan(root, &path) {
            Some((target, old_name, plan_name)) => (target, Some((old_name, plan_name))),
            None => {
                el.resolution = Some(Resolution::Unresolved(format!(
                    "its target `{}` is not in the plan; point the Module Controller at an existing controller",
                    path.join(" / ")
                )));
                return;
            }
        },
    };
    let mut target = target.clone();
    // A Test Fragment is saved disabled; what a module runs is enabled.
    target.enabled = true;
    let how = format!(
        "runs `{}` ({}) from {}",
        target.name,
        target.class,
        path.join(" / ")
    );
    el.resolution = Some(match renamed {
        None => Resolution::Resolved(how),
        Some((old_name, plan_name)) => Resolution::Approximated(format!(
            "{how}: the path names the test plan `{old_name}`, this one is `{plan_name}` (a plan copied and renamed?), so it was found by the rest of its path; re-select the target in JMeter to be sure"
        )),
    });
    el.children = vec![target];
    walk(&mut el.children, root, base_dir, depth + 1);
}

/// The element at `path` (names from the tree's root). JMeter's paths start with the name of
/// the tree's root node (`WorkBench` or `Test Plan`), so leading names that match nothing are
/// skipped.
fn find<'a>(root: &'a [El], path: &[String]) -> Option<&'a El> {
    (0..path.len()).find_map(|skip| find_from(root, &path[skip..]))
}

fn find_from<'a>(level: &'a [El], path: &[String]) -> Option<&'a El> {
    let mut level = level;
    let mut found: Option<&El> = None;
    for name in path {
        let el = level.iter().find(|e| &e.name == name)?;
        found = Some(el);
        level = &el.children;
    }
    found
}

/// A Module Controller's path saved in a plan that was then copied and renamed still names the
/// old test plan: the element under *this* test plan at the rest of the path, with the old name
/// and the plan's. Only the test plan's own name may differ, and the rest must match exactly.
fn find_in_renamed_plan<'a>(root: &'a [El], path: &[String]) -> Option<(&'a El, String, String)> {
    let plan = root.iter().find(|e| e.class == "TestPlan")?;
    // The old name is at index 1 under a root node name (`Test Plan`, `WorkBench`), else 0.
    (0..path.len().min(2)).find_map(|at| {
        let rest = &path[at + 1..];
        if rest.is_empty() || path[at] == plan.name {
            return None;
        }
        find_from(&plan.children, rest).map(|el| (el, path[at].clone(), plan.name.clone()))
    })
}

fn include(el: &mut El, base_dir: &Path, depth: usize) {
    let file = el.s("IncludeController.includepath").trim().to_string();
    if file.is_empty() {
        el.resolution = Some(Resolution::Unresolved(
            "no file given in the Include Controller".into(),
        ));
        return;
    }
    if depth >= MAX_DEPTH {
        el.resolution = Some(Resolution::Unresolved(format!(
            "includes nest deeper than {MAX_DEPTH} levels; not followed"
        )));
        return;
    }
    let path = base_dir.join(&file);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            el.resolution = Some(Resolution::Unresolved(format!(
                "cannot read `{}` ({e}); put the included file beside the JMX and import again",
                path.display()
            )));
            return;
        }
    };
    let els = match jmx::parse(&text) {
        Ok(els) => els,
        Err(e) => {
            el.resolution = Some(Resolution::Unresolved(format!(
                "`{file}` is not a JMX plan: {e}"
            )));
            return;
        }
    };
    // The included plan's Test Plan element is a wrapper; its fragments are what runs.
    let mut children: Vec<El> = els
        .into_iter()
        .flat_map(|e| {
            if e.class == "TestPlan" {
                e.children
            } else {
                vec![e]
            }
        })
        .collect();
    for c in &mut children {
        if c.class == "TestFragmentController" {
            c.enabled = true;
        }
        mark_file(c, &file);
    }
    let dir = path.parent().unwrap_or(base_dir).to_path_buf();
    let included_root = children.clone();
    walk(&mut children, &included_root, &dir, depth + 1);
    el.resolution = Some(Resolution::Resolved(format!("includes `{file}`")));
    el.children = children;
}

fn mark_file(el: &mut El, file: &str) {
    el.file = Some(file.to_string());
    for c in &mut el.children {
        mark_file(c, file);
    }
}
