//! The compiled plan's data model, one file per part: what [`load_with_grammars`](crate::load_with_grammars) returns and
//! the engine and protocols read. Every type is re-exported at the crate's root.

mod http;
mod load;
mod load_override;
mod plan;
mod response;
mod scenario;
mod step;
mod target;
mod tls;

pub use http::{CloseMode, ConnectionScope, CookieMode, HttpSettings, HttpVersion};
pub use load::{LoadModel, RateStage, VuStage, WarmUp, DEFAULT_ARRIVAL_SLACK};
pub use load_override::LoadOverride;
pub use plan::{DistributedSettings, OnAgentLoss, Plan, MASK, MASK_MIN_LEN};
pub use response::{
    reads_body, Check, CheckKind, Extract, ExtractSource, HashAlgorithm, Occurrence, ValueExpect,
};
pub use scenario::{CheckInfo, FeederUse, MetricKind, Scenario, Shared, StepInfo};
pub use step::{Condition, ConditionTest, CustomStep, ExecCommand, OnFailure, Step, TcpPayload};
pub use target::{Scheme, Target, TargetUrl, BUILTIN_HOST};
pub use tls::{
    ClientIdentity, TlsSessionMode, TlsSettings, TlsVersionSetting, TLS_CIPHER_SUITES,
    TLS_KX_GROUPS,
};
