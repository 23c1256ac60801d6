// Lines the Linux-only check must refuse (each marked), and lines it must let through.
import Foundation
import Glibc  // must fail
import FoundationNetworking  // must fail

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
  _ = stat().st_ctim  // must fail
  _ = prctl(0)  // must fail
}

// The project's own Linux-only declarations (Declarations.swift), used where Apple builds them too.
func useDeclarations() {
  _ = LinuxOnlyPreferences.synchronize(domain: "a")  // must fail
  _ = Storage.directReadsAfterWrite  // must fail
  _ = linuxOnlyHelper()  // must fail
  let helper = linuxOnlyHelper  // must fail
  _ = linuxOnlyCount + 1  // must fail
  _ = bothPlatforms() + Storage().shared()
  _ = "LinuxOnlyPreferences.synchronize in a string"
}

extension Storage {
  func apple() -> Int { linuxOnlyMember() }  // must fail
}

// Conditions the check cannot classify are refused, not guessed.
#if os(Linux) || os(Android)  // must fail
  let android = 1
#endif
#if os(Linux) && arch(x86_64)  // must fail
  let intel = 1
#endif
#if os(Linux) ||  // must fail
  os(FreeBSD)
  let bsd = 1
#endif
