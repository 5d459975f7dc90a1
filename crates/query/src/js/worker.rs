//! One pool thread's QuickJS runtime: compiles each distinct function
//! once (kept in a global slot), and runs calls with the interrupt
//! deadline set for each.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rquickjs::{Context, Ctx, Function, Runtime, Value as JsValue};
use serde_json::Value;

use super::{JsBatch, JsCall, JsFailure, JsLimits, Reply};

/// Riak's JavaScript built-ins, loaded into every runtime.
pub const BUILTINS: &str = include_str!("builtins.js");

/// What [`exception`] says for a thrown `null`.
const THROWN_NULL: &str = "uncaught null";

/// Functions kept compiled per runtime; past this the cache starts over.
const COMPILED_MAX: usize = 256;

pub(super) struct Worker {
    _runtime: Runtime,
    context: Context,
    /// Nanoseconds since `epoch` after which the running call stops.
    deadline: Arc<AtomicU64>,
    epoch: Instant,
    compiled: HashMap<String, String>,
    limits: JsLimits,
}

impl Worker {
    pub(super) fn new(limits: JsLimits) -> Result<Worker, String> {
        let runtime = Runtime::new().map_err(|e| format!("JavaScript runtime: {e}"))?;
        runtime.set_memory_limit(limits.memory_bytes);
        runtime.set_max_stack_size(512 * 1024);
        let deadline = Arc::new(AtomicU64::new(u64::MAX));
        let epoch = Instant::now();
        let watched = Arc::clone(&deadline);
        runtime.set_interrupt_handler(Some(Box::new(move || {
            epoch.elapsed().as_nanos() as u64 > watched.load(Ordering::Relaxed)
        })));
        let context = Context::full(&runtime).map_err(|e| format!("JavaScript context: {e}"))?;
        context.with(|ctx| {
            ctx.eval::<(), _>(BUILTINS)
                .map_err(|e| format!("loading the built-ins: {}", exception(&ctx, e)))
        })?;
        Ok(Worker {
            _runtime: runtime,
            context,
            deadline,
            epoch,
            compiled: HashMap::new(),
            limits,
        })
    }

    /// Runs a batch; the flag is false when the runtime should be
    /// rebuilt (a call hit a limit or failed).
    pub(super) fn run(&mut self, batch: &JsBatch) -> (Reply, bool) {
        let slot = match self.compile(&batch.function) {
            Ok(slot) => slot,
            Err(message) => return (Err(JsFailure { call: 0, message }), true),
        };
        let mut outputs = Vec::with_capacity(batch.calls.len());
        for (i, call) in batch.calls.iter().enumerate() {
            let limit = Instant::now() + self.limits.call_timeout;
            let until = limit.min(batch.deadline);
            self.arm(until);
            let result = self.call(&slot, &batch.arg, call);
            self.arm_never();
            match result {
                Ok(out) => outputs.push(out),
                Err(message) => {
                    let message = self.explain(message, until, limit);
                    return (Err(JsFailure { call: i, message }), false);
                }
            }
        }
        (Ok(outputs), true)
    }

    fn arm(&self, until: Instant) {
        let nanos = until.saturating_duration_since(self.epoch).as_nanos() as u64;
        self.deadline.store(nanos, Ordering::Relaxed);
    }

    fn arm_never(&self) {
        self.deadline.store(u64::MAX, Ordering::Relaxed);
    }

    /// Says which limit a failed call hit, if it hit one.
    fn explain(&self, message: String, until: Instant, call_limit: Instant) -> String {
        if Instant::now() >= until {
            return match until >= call_limit {
                true => format!(
                    "JavaScript call ran over its time limit of {} ms",
                    self.limits.call_timeout.as_millis()
                ),
                false => "timeout: the job ran past its deadline".into(),
            };
        }
        // QuickJS throws `null` when it cannot even build the error.
        if message.contains("out of memory") || message == THROWN_NULL {
            return format!(
                "JavaScript call ran out of memory (limit {} MiB){}",
                self.limits.memory_bytes >> 20,
                if message == THROWN_NULL {
                    ", or threw null"
                } else {
                    ""
                }
            );
        }
        message
    }

    /// The global slot holding `function`'s compiled value.
    fn compile(&mut self, function: &str) -> Result<String, String> {
        if let Some(slot) = self.compiled.get(function) {
            return Ok(slot.clone());
        }
        if self.compiled.len() >= COMPILED_MAX {
            self.compiled.clear();
        }
        let slot = format!("__eddy_fn_{}", self.compiled.len());
        self.arm(Instant::now() + self.limits.call_timeout);
        let done = self.context.with(|ctx| {
            let source = format!("(\n{function}\n)");
            let value: JsValue = ctx
                .eval(source)
                .map_err(|e| format!("compiling the function: {}", exception(&ctx, e)))?;
            if !value.is_function() {
                return Err(format!("{} is not a function", short(function)));
            }
            ctx.globals()
                .set(slot.as_str(), value)
                .map_err(|e| exception(&ctx, e))
        });
        self.arm_never();
        done?;
        self.compiled.insert(function.to_owned(), slot.clone());
        Ok(slot)
    }

    fn call(&self, slot: &str, arg: &str, call: &JsCall) -> Result<Vec<Value>, String> {
        self.context.with(|ctx| {
            let f: Function = ctx.globals().get(slot).map_err(|e| exception(&ctx, e))?;
            let parse = |text: &str| ctx.json_parse(text).map_err(|e| exception(&ctx, e));
            let result: JsValue = match call {
                JsCall::Map { value, keydata } => {
                    f.call((parse(value)?, parse(keydata)?, parse(arg)?))
                }
                JsCall::Reduce { values } => f.call((parse(values)?, parse(arg)?)),
            }
            .map_err(|e| exception(&ctx, e))?;
            let text = ctx
                .json_stringify(result)
                .map_err(|e| exception(&ctx, e))?
                .map(|s| s.to_string())
                .transpose()
                .map_err(|e| exception(&ctx, e))?;
            match text.as_deref().map(serde_json::from_str::<Value>) {
                Some(Ok(Value::Array(list))) => Ok(list),
                _ => Err("the function must return a list (an Array)".into()),
            }
        })
    }
}

/// The text of a JavaScript failure: the thrown value's message and
/// stack where there is one.
fn exception(ctx: &Ctx<'_>, e: rquickjs::Error) -> String {
    if !e.is_exception() {
        return e.to_string();
    }
    let thrown = ctx.catch();
    if let Some(ex) = thrown.as_exception() {
        let message = ex.message().unwrap_or_default();
        return match ex.stack().filter(|s| !s.is_empty()) {
            Some(stack) => format!("{message}\n{stack}"),
            None => message,
        };
    }
    match ctx.json_stringify(thrown) {
        Ok(Some(s)) => format!("uncaught {}", s.to_string().unwrap_or_default()),
        _ => "uncaught exception".into(),
    }
}

fn short(source: &str) -> String {
    let s: String = source.chars().take(60).collect();
    match s.len() < source.len() {
        true => format!("{s}…"),
        false => s,
    }
}
