//! Flow steps: `loop` (count, while, foreach), `group`, `if`/`then`/`else`, `once`, `random`.

use super::steps::Build;
use super::Ctx;
use crate::error::PlanError;
use crate::yaml::{Kind, Node};
use crate::{Condition, ConditionTest, MetricKind, Step};

const LOOP_KEYS: [&str; 6] = ["count", "while", "foreach", "as", "max", "steps"];
const CONDITION_KEYS: [&str; 6] = ["var", "exists", "equals", "not_equals", "matches", "js"];
/// `loop: { while }` without `max`: a guard against a loop that never ends.
const DEFAULT_WHILE_MAX: u64 = 1000;

impl Ctx<'_> {
    /// A step whose first flow key is `key`.
    pub(super) fn flow(
        &self,
        node: &Node,
        path: &str,
        key: &str,
        base: &str,
        m: &mut Build,
        depth: usize,
    ) -> Result<Step, PlanError> {
        if key == "if" {
            let f = self.map(node, path, &["if", "then", "else"])?;
            let condition = self.condition(f.get("if").expect("present"), &f.child("if"))?;
            let then_node =
                self.required(&f, "then", "the steps to run when the condition holds")?;
            let then = self.steps(then_node, &f.child("then"), base, m, depth + 1)?;
            let otherwise = match f.get("else") {
                Some(e) => self.steps(e, &f.child("else"), base, m, depth + 1)?,
                None => Vec::new(),
            };
            return Ok(Step::If {
                condition,
                then,
                otherwise,
            });
        }
        let f = self.only(node, path, key)?;
        let value = f.get(key).expect("present");
        let field = f.child(key);
        match key {
            "loop" => self.loop_step(value, &field, base, m, depth),
            "group" => {
                let g = self.map(value, &field, &["name", "steps"])?;
                let name_node =
                    self.required(&g, "name", "the group's name, e.g. `name: checkout`")?;
                let name = self.string(name_node, &g.child("name"))?;
                if name.trim().is_empty() {
                    return Err(self.err(
                        name_node,
                        &g.child("name"),
                        "empty name; expected a group name",
                    ));
                }
                let metric = m.id_of(name.clone(), MetricKind::Group);
                if m.infos[metric].kind != MetricKind::Group {
                    return Err(self
                        .err(name_node, &g.child("name"), format!("{name:?} is already the name of a request step; expected a group name of its own"))
                        .with_hint("rename the group or the step"));
                }
                let steps_node = self.required(&g, "steps", "a list of steps")?;
                let steps = self.steps(steps_node, &g.child("steps"), base, m, depth + 1)?;
                Ok(Step::Group { metric, steps })
            }
            "once" => {
                let steps = self.steps(value, &field, base, m, depth + 1)?;
                m.onces += 1;
                Ok(Step::Once {
                    id: m.onces - 1,
                    steps,
                })
            }
            "random" => {
                let hint =
                    "write `random: [{ weight: 70, steps: [...] }, { weight: 30, steps: [...] }]`";
                let Kind::Seq(items) = &value.kind else {
                    return Err(self
                        .err(
                            value,
                            &field,
                            format!(
                                "expected a list of weighted branches, found {}",
                                value.describe()
                            ),
                        )
                        .with_hint(hint));
                };
                if items.is_empty() {
                    return Err(self
                        .err(
                            value,
                            &field,
                            "the list is empty; expected at least one branch",
                        )
                        .with_hint(hint));
                }
                let mut branches = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let p = format!("{field}[{i}]");
                    let b = self
                        .map(item, &p, &["weight", "steps"])
                        .map_err(|e| e.with_hint(hint))?;
                    let weight = match b.get("weight") {
                        Some(w) => self.uint(w, &b.child("weight"), 1, 1_000_000, "a branch's weight is a positive whole number; branches are chosen in proportion")? as u32,
                        None => 1,
                    };
                    let steps_node = self.required(&b, "steps", "a list of steps")?;
                    branches.push((
                        weight,
                        self.steps(steps_node, &b.child("steps"), base, m, depth + 1)?,
                    ));
                }
                Ok(Step::Random { branches })
            }
            _ => unreachable!("think is handled by the caller"),
        }
    }

    fn loop_step(
        &self,
        node: &Node,
        path: &str,
        base: &str,
        m: &mut Build,
        depth: usize,
    ) -> Result<Step, PlanError> {
        let hint = "a loop is `{ count: 3, steps }`, `{ while: { var: next, exists: true }, max: 100, steps }` or `{ foreach: ids, as: id, steps }`";
        let f = self
            .map(node, path, &LOOP_KEYS)
            .map_err(|e| e.with_hint(hint))?;
        let kind = self
            .at_most_one(
                &f,
                &["count", "while", "foreach"],
                "of count, while, foreach",
                hint,
            )?
            .ok_or_else(|| {
                self.err(
                    node,
                    path,
                    "missing key `count`; expected `count`, `while` or `foreach`",
                )
                .with_hint(hint)
            })?;
        for (key, owner) in [("as", "foreach"), ("max", "while")] {
            if let (Some(k), true) = (f.key(key), kind != owner) {
                return Err(self
                    .err(
                        k,
                        &f.child(key),
                        format!("`{key}` goes with `{owner}`, not with `{kind}`"),
                    )
                    .with_hint(hint));
            }
        }
        let steps_node = self.required(&f, "steps", "a list of steps")?;
        let steps = self.steps(steps_node, &f.child("steps"), base, m, depth + 1)?;
        match kind {
            "count" => {
                let count = self.uint(
                    f.get("count").expect("present"),
                    &f.child("count"),
                    1,
                    u64::MAX,
                    "`count` is how many times the loop runs its steps, at least 1",
                )?;
                Ok(Step::Loop { count, steps })
            }
            "while" => {
                let condition =
                    self.condition(f.get("while").expect("present"), &f.child("while"))?;
                let max = match f.get("max") {
                    Some(x) => self.uint(
                        x,
                        &f.child("max"),
                        1,
                        u64::MAX,
                        "`max` bounds how many times a while loop runs",
                    )?,
                    None => DEFAULT_WHILE_MAX,
                };
                Ok(Step::While {
                    condition,
                    max,
                    steps,
                })
            }
            _ => {
                let list_node = f.get("foreach").expect("present");
                let list = self.runtime_slot(list_node, &f.child("foreach"))?;
                let as_node =
                    self.required(&f, "as", "the variable that holds each item, e.g. `as: id`")?;
                let item = self.runtime_slot(as_node, &f.child("as"))?;
                Ok(Step::ForEach { list, item, steps })
            }
        }
    }

    /// The slot of a runtime variable named by `node` (`name` or `${name}`).
    fn runtime_slot(&self, node: &Node, path: &str) -> Result<usize, PlanError> {
        let raw = node.as_scalar().map_or(String::new(), |s| s.text.clone());
        let name = raw
            .trim()
            .trim_start_matches("${")
            .trim_end_matches('}')
            .to_string();
        match self.runtime.iter().position(|r| *r == name) {
            Some(slot) => Ok(slot),
            None => {
                let known: Vec<&str> = self.runtime.iter().map(String::as_str).collect();
                let hint = match crate::error::did_you_mean(&name, known.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None if known.is_empty() => "this scenario sets no runtime variables; set one with `extract:`, a feeder or `foreach ... as`".to_string(),
                    None => format!("the runtime variables are: {}", known.join(", ")),
                };
                Err(self
                    .err(node, path, format!("{name:?} is not a runtime variable of this scenario; expected a variable set by `extract:`, a feeder or a loop"))
                    .with_hint(hint))
            }
        }
    }

    /// `{ var: NAME, exists: true | equals: V | not_equals: V | matches: REGEX }`.
    fn condition(&self, node: &Node, path: &str) -> Result<Condition, PlanError> {
        let hint = "e.g. `{ var: role, equals: admin }`, `{ var: token, exists: true }` or `{ var: code, matches: \"^2\" }`";
        let f = self
            .map(node, path, &CONDITION_KEYS)
            .map_err(|e| e.with_hint(hint))?;
        if let Some(js) = f.get("js") {
            if let Some(other) = ["var", "exists", "equals", "not_equals", "matches"]
                .into_iter()
                .find(|k| f.get(k).is_some())
            {
                let key = f.key(other).expect("present");
                return Err(self
                    .err(key, &f.child(other), format!("`{other}` does not go with `js:`"))
                    .with_hint("a condition is either `{ js: EXPRESSION }` or `{ var: NAME, equals: VALUE }` (or exists, not_equals, matches)"));
            }
            let func = self.js_expression(js, &f.child("js"))?;
            return Ok(Condition {
                var: 0,
                test: ConditionTest::Script(func),
            });
        }
        let var_node = self
            .required(&f, "var", "the runtime variable to test")
            .map_err(|e| e.with_hint(hint))?;
        let var = self.runtime_slot(var_node, &f.child("var"))?;
        let test = match self.at_most_one(
            &f,
            &["exists", "equals", "not_equals", "matches"],
            "test",
            hint,
        )? {
            None => ConditionTest::Exists(true),
            Some(k) => {
                let n = f.get(k).expect("present");
                let p = f.child(k);
                match k {
                    "exists" => ConditionTest::Exists(self.boolean(n, &p, "exists")?),
                    "equals" => ConditionTest::Equals(self.template(n, &p)?),
                    "not_equals" => ConditionTest::NotEquals(self.template(n, &p)?),
                    _ => ConditionTest::Matches(self.regex(n, &p)?),
                }
            }
        };
        Ok(Condition { var, test })
    }
}
