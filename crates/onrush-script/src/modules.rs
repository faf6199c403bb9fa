//! Where the plan's modules come from: read from the plan's folder (and recorded) when the plan
//! loads, served from memory in the workers; import paths resolved relative to the importer and
//! never above the plan's folder.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

use rquickjs::loader::{Loader, Resolver};
use rquickjs::{Ctx, Error, Module};

use crate::builtins;
use crate::glue::GLUE;

/// The plan's modules, from disk at load (recorded), from memory in the workers.
pub(crate) struct Sources {
    /// Read files from here (load) or only from `modules` (workers).
    pub(crate) dir: Option<PathBuf>,
    pub(crate) modules: Vec<(String, String)>,
    pub(crate) opened: Vec<(String, String)>,
}

impl Sources {
    pub(crate) fn module(&mut self, name: &str) -> Result<String, String> {
        if let Some(src) = builtins::source(name) {
            return Ok(src.to_string());
        }
        if let Some((_, src)) = self.modules.iter().find(|(n, _)| n == name) {
            return Ok(src.clone());
        }
        let Some(dir) = &self.dir else {
            return Err(format!("module {name:?} is not in the plan's scripts"));
        };
        let src = std::fs::read_to_string(dir.join(name))
            .map_err(|e| format!("cannot read {name}: {e}"))?;
        self.modules.push((name.to_string(), src.clone()));
        Ok(src)
    }

    pub(crate) fn open(&mut self, name: &str) -> Result<String, String> {
        let name = normalize("", name)?;
        if let Some((_, c)) = self.opened.iter().find(|(n, _)| *n == name) {
            return Ok(c.clone());
        }
        let Some(dir) = &self.dir else {
            return Err(format!(
                "open({name:?}): files are opened when the plan loads (at a module's top level), not during the run"
            ));
        };
        let c =
            std::fs::read_to_string(dir.join(&name)).map_err(|e| format!("open({name:?}): {e}"))?;
        self.opened.push((name, c.clone()));
        Ok(c)
    }
}

/// `base`'s folder joined with `name`, `.` and `..` resolved; never above the plan's folder.
pub(crate) fn normalize(base: &str, name: &str) -> Result<String, String> {
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop();
    for p in name.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(format!(
                        "{name:?} is outside the plan's folder: scripts and the files they open must be in it or below (they travel with the plan)"
                    ));
                }
            }
            p => parts.push(p),
        }
    }
    parts.retain(|p| !p.is_empty());
    Ok(parts.join("/"))
}

pub(crate) struct Resolve;

impl Resolver for Resolve {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<rquickjs::loader::ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        if builtins::source(name).is_some() {
            return Ok(name.to_string());
        }
        if name.starts_with("./") || name.starts_with("../") {
            return normalize(base, name).map_err(|m| Error::new_resolving_message(base, name, m));
        }
        // The glue module imports the plan's modules by their plan-relative names.
        if base == GLUE || base.is_empty() {
            return Ok(name.to_string());
        }
        Err(Error::new_resolving_message(
            base,
            name,
            format!(
                "expected a path relative to the importing file (`./{name}`) or a built-in module ({})",
                builtins::MODULES.join(", ")
            ),
        ))
    }
}

pub(crate) struct Load(pub(crate) Rc<RefCell<Sources>>);

impl Loader for Load {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<rquickjs::loader::ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js, rquickjs::module::Declared>> {
        let src = self
            .0
            .borrow_mut()
            .module(name)
            .map_err(|m| Error::new_loading_message(name, m))?;
        Module::declare(ctx.clone(), name, src)
    }
}
