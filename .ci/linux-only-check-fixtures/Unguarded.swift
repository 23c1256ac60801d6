// Lines the Linux-only check must refuse (each marked), and lines it must let through.
import Foundation

func watch(_ folder: String) {
  let descriptor = inotify_init1(0)  // must fail
  _ = inotify_add_watch(descriptor, folder, UInt32(IN_MODIFY))  // must fail
  let text = "/proc/self/statm"  // must fail
  _ = mount("a", "b", "c", 0, nil)  // must fail
  // inotify_init1 in a comment is fine
  #if canImport(Darwin)
    _ = umount("b")  // must fail
  #endif
  #if !os(Linux)
    _ = gettid()  // must fail
  #endif
  _ = text
}
