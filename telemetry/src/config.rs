//! Telemetry settings: the standard OpenTelemetry variables and the flags that
//! match them.
//!
//! `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER` and
//! `OTEL_TRACES_SAMPLER_ARG` keep their standard meaning; each has a flag
//! (`--otlp-endpoint`, `--service-name`, `--trace-sampler`,
//! `--trace-sampler-arg`) that wins over the variable. [`TelemetryArgs`] is
//! flattened into a subcommand's clap `Args`; [`TelemetryArgs::config`]
//! validates it into a [`TelemetryConfig`] before any work starts.

use crate::TelemetryError;

/// The stderr log when `RUST_LOG` is unset: the project's events at INFO
/// (`skillshift` matches every `skillshift*` target), dependencies at WARN.
/// The run's spans (target `skillshift_telemetry`, all INFO) stay off the
/// log, so without an OTLP endpoint no layer wants them and they are disabled
/// at their callsites: tracing compiled in costs nothing measurable
/// (docs/performance.md, Telemetry). `RUST_LOG=info` brings them back into
/// the log as context.
pub const DEFAULT_LOG_FILTER: &str = "warn,skillshift=info,skillshift_telemetry=warn";

/// The flags, each backed by its standard environment variable.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TelemetryArgs {
    /// OTLP gRPC endpoint for traces, e.g. http://localhost:4317. Unset: no export.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT", value_name = "URL")]
    pub otlp_endpoint: Option<String>,

    /// The `service.name` spans are reported under.
    #[arg(long, env = "OTEL_SERVICE_NAME", value_name = "NAME")]
    pub service_name: Option<String>,

    /// always_on, always_off, traceidratio, parentbased_always_on (default),
    /// parentbased_always_off or parentbased_traceidratio.
    #[arg(long, env = "OTEL_TRACES_SAMPLER", value_name = "SAMPLER")]
    pub trace_sampler: Option<String>,

    /// The sampler's argument: the ratio in [0, 1] for the *traceidratio samplers.
    #[arg(long, env = "OTEL_TRACES_SAMPLER_ARG", value_name = "ARG")]
    pub trace_sampler_arg: Option<String>,

    /// Put LLM prompts and responses on `chat` spans (off by default: they may be large or private).
    #[arg(long, env = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value_name = "BOOL",
          num_args = 0..=1, default_missing_value = "true")]
    pub trace_llm_content: Option<String>,
}

/// How root spans are sampled (OpenTelemetry SDK environment specification).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SamplerChoice {
    AlwaysOn,
    AlwaysOff,
    TraceIdRatio(f64),
    ParentBasedAlwaysOn,
    ParentBasedAlwaysOff,
    ParentBasedTraceIdRatio(f64),
}

/// Validated telemetry settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetryConfig {
    /// `None`: no OpenTelemetry layer at all, so spans cost only what the log filter lets through.
    pub otlp_endpoint: Option<String>,
    pub service_name: String,
    pub sampler: SamplerChoice,
    /// Record `gen_ai.input.messages` / `gen_ai.output.messages` on chat spans.
    pub capture_llm_content: bool,
    /// Log filter when `RUST_LOG` is unset.
    pub default_log_filter: String,
}

impl TelemetryConfig {
    /// Logging to stderr only, no export: for tests and commands that trace nothing.
    pub fn logs_only(service_name: &str) -> Self {
        TelemetryConfig {
            otlp_endpoint: None,
            service_name: service_name.to_string(),
            sampler: SamplerChoice::ParentBasedAlwaysOn,
            capture_llm_content: false,
            default_log_filter: DEFAULT_LOG_FILTER.to_string(),
        }
    }
}

impl TelemetryArgs {
    /// Validates the flags; `default_service` names the process when neither
    /// `--service-name` nor `OTEL_SERVICE_NAME` does (`skillshift-coordinator`, `skillshift-worker`).
    pub fn config(&self, default_service: &str) -> Result<TelemetryConfig, TelemetryError> {
        let otlp_endpoint = match self.otlp_endpoint.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(e) => Some(validate_endpoint(e)?),
        };
        let service_name = match self.service_name.as_deref().map(str::trim) {
            None | Some("") => default_service.to_string(),
            Some(s) => s.to_string(),
        };
        let sampler = parse_sampler(self.trace_sampler.as_deref(), self.trace_sampler_arg.as_deref())?;
        let capture_llm_content = match self.trace_llm_content.as_deref().map(str::trim) {
            None | Some("") => false,
            Some(v) if v.eq_ignore_ascii_case("true") || v == "1" => true,
            Some(v) if v.eq_ignore_ascii_case("false") || v == "0" => false,
            Some(v) => {
                return Err(TelemetryError::Config(format!(
                    "--trace-llm-content / OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: expected true or false, found `{v}`"
                )))
            }
        };
        Ok(TelemetryConfig {
            otlp_endpoint,
            service_name,
            sampler,
            capture_llm_content,
            default_log_filter: DEFAULT_LOG_FILTER.to_string(),
        })
    }
}

fn validate_endpoint(e: &str) -> Result<String, TelemetryError> {
    let rest = e.strip_prefix("http://").or_else(|| e.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() && !host.starts_with('/') => Ok(e.trim_end_matches('/').to_string()),
        _ => Err(TelemetryError::Config(format!(
            "--otlp-endpoint / OTEL_EXPORTER_OTLP_ENDPOINT: expected a url like http://host:4317, found `{e}`"
        ))),
    }
}

/// Parses `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` as the SDK specification defines them.
pub fn parse_sampler(name: Option<&str>, arg: Option<&str>) -> Result<SamplerChoice, TelemetryError> {
    let ratio = || -> Result<f64, TelemetryError> {
        match arg.map(str::trim) {
            None | Some("") => Ok(1.0),
            Some(a) => match a.parse::<f64>() {
                Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
                _ => Err(TelemetryError::Config(format!(
                    "--trace-sampler-arg / OTEL_TRACES_SAMPLER_ARG: expected a ratio in [0, 1], found `{a}`"
                ))),
            },
        }
    };
    let name = name.map(str::trim).unwrap_or("");
    Ok(match name {
        "" | "parentbased_always_on" => SamplerChoice::ParentBasedAlwaysOn,
        "always_on" => SamplerChoice::AlwaysOn,
        "always_off" => SamplerChoice::AlwaysOff,
        "traceidratio" => SamplerChoice::TraceIdRatio(ratio()?),
        "parentbased_always_off" => SamplerChoice::ParentBasedAlwaysOff,
        "parentbased_traceidratio" => SamplerChoice::ParentBasedTraceIdRatio(ratio()?),
        other => {
            return Err(TelemetryError::Config(format!(
                "--trace-sampler / OTEL_TRACES_SAMPLER: unknown sampler `{other}` (expected always_on, always_off, \
                 traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio)"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(endpoint: Option<&str>, sampler: Option<&str>, arg: Option<&str>) -> TelemetryArgs {
        TelemetryArgs {
            otlp_endpoint: endpoint.map(String::from),
            service_name: None,
            trace_sampler: sampler.map(String::from),
            trace_sampler_arg: arg.map(String::from),
            trace_llm_content: None,
        }
    }

    #[test]
    fn no_endpoint_means_no_export() {
        let c = args(None, None, None).config("svc").unwrap();
        assert_eq!(c.otlp_endpoint, None);
        assert_eq!(c.service_name, "svc");
        assert_eq!(c.sampler, SamplerChoice::ParentBasedAlwaysOn);
        assert_eq!(args(Some("  "), None, None).config("svc").unwrap().otlp_endpoint, None);
    }

    #[test]
    fn endpoint_must_be_a_url() {
        let c = args(Some("http://localhost:4317/"), None, None).config("svc").unwrap();
        assert_eq!(c.otlp_endpoint.as_deref(), Some("http://localhost:4317"));
        let e = args(Some("localhost:4317"), None, None).config("svc").unwrap_err();
        assert!(e.to_string().contains("OTEL_EXPORTER_OTLP_ENDPOINT"), "{e}");
    }

    #[test]
    fn samplers_follow_the_sdk_names() {
        assert_eq!(
            args(None, Some("traceidratio"), Some("0.25")).config("s").unwrap().sampler,
            SamplerChoice::TraceIdRatio(0.25)
        );
        assert_eq!(
            args(None, Some("parentbased_traceidratio"), None).config("s").unwrap().sampler,
            SamplerChoice::ParentBasedTraceIdRatio(1.0)
        );
        assert_eq!(args(None, Some("always_off"), None).config("s").unwrap().sampler, SamplerChoice::AlwaysOff);
        let e = args(None, Some("traceidratio"), Some("1.5")).config("s").unwrap_err();
        assert!(e.to_string().contains("[0, 1]"), "{e}");
        let e = args(None, Some("sometimes"), None).config("s").unwrap_err();
        assert!(e.to_string().contains("unknown sampler `sometimes`"), "{e}");
    }

    #[test]
    fn flags_parse_through_clap() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            t: TelemetryArgs,
        }
        let cli = Cli::try_parse_from([
            "x",
            "--otlp-endpoint",
            "http://127.0.0.1:4317",
            "--service-name",
            "w1",
            "--trace-llm-content",
        ])
        .unwrap();
        let c = cli.t.config("d").unwrap();
        assert_eq!(c.otlp_endpoint.as_deref(), Some("http://127.0.0.1:4317"));
        assert_eq!(c.service_name, "w1");
        assert!(c.capture_llm_content);
    }
}
