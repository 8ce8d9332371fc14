//! The page's entry point: mounts the app, nothing else.

fn main() {
    askuser_web::mount_app();
}
