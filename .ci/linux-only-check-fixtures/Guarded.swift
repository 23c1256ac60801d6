// Linux-only lines inside Linux-only regions: the check must let every one through.
import Foundation

#if os(Linux)
  import Glibc
  let descriptor = inotify_init1(Int32(IN_CLOEXEC))
#endif

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  let statm = "/proc/self/statm"
#endif

#if canImport(Darwin)
  let time = stat().st_mtimespec
#else
  let time = stat().st_mtim
#endif

/* inotify_init1 in a block comment */
