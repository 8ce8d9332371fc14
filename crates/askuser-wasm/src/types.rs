//! The TypeScript declarations of every payload, added to the generated `askuser.d.ts`.
//! Functions and classes are declared by wasm-bindgen from their signatures (with the
//! `unchecked_*_type` names used here); `tests/embed/usage.ts` checks both with `tsc`.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = include_str!("types.d.ts");

#[wasm_bindgen]
extern "C" {
    /// `ValidateOptions`: an optional trailing parameter keeps its `?` in TypeScript
    /// only with a named type (`unchecked_param_type` would make it required).
    #[wasm_bindgen(typescript_type = "ValidateOptions")]
    pub type ValidateOptionsArg;
    #[wasm_bindgen(typescript_type = "DialogOptions")]
    pub type DialogOptionsArg;
    #[wasm_bindgen(typescript_type = "MountOptions")]
    pub type MountOptionsArg;
}
