//! `distributed:`: how a run across agents behaves when one is lost. The split of the load
//! needs no setting: it is exact for any number of agents.

use super::{Ctx, Node, PlanError};
use crate::{DistributedSettings, OnAgentLoss};

const DISTRIBUTED_KEYS: [&str; 1] = ["on_agent_loss"];

impl Ctx<'_> {
    pub(super) fn distributed(
        &self,
        node: Option<&Node>,
    ) -> Result<DistributedSettings, PlanError> {
        let Some(node) = node else {
            return Ok(DistributedSettings::default());
        };
        let f = self.map(node, "distributed", &DISTRIBUTED_KEYS)?;
        let on_agent_loss = match f.get("on_agent_loss") {
            None => OnAgentLoss::Continue,
            Some(n) => self.choice(
                n,
                &f.child("on_agent_loss"),
                "on_agent_loss",
                &[
                    OnAgentLoss::Continue,
                    OnAgentLoss::Abort,
                    OnAgentLoss::Replace,
                ],
                OnAgentLoss::as_str,
                "`continue` keeps the run going with the others, `abort` stops every agent, \
                 `replace` hands a lost agent's share to a spare agent",
            )?,
        };
        Ok(DistributedSettings { on_agent_loss })
    }
}
