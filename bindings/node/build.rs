//! Node-API link settings (napi-build).

fn main() {
    napi_build::setup();
}
