// A helper the tests start as a real second process: it writes through the library and then waits to be
// killed, so the tests can prove what reached disk.
//
//   rdefaults-test-helper flush DOMAIN KEY INT    write, flush(), print "ready", wait
//   rdefaults-test-helper noflush DOMAIN KEY INT  write, print "written", wait (the coalesced save must land)
//   rdefaults-test-helper write DOMAIN KEY INT    write, print the write's time (ns since boot), exit
//   rdefaults-test-helper exit DOMAIN KEY INT     write, exit at once (the save at exit must keep it)
//   rdefaults-test-helper fds DOMAIN KEY INT      print descriptor counts before, during and after observing
//   rdefaults-test-helper sweep DOMAIN OTHER      write k=1 to both, print "written", flush DOMAIN only, print "flushed"
import Dispatch
import Foundation
import ReactiveDefaults

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

let arguments = CommandLine.arguments
if arguments.count == 4, arguments[1] == "sweep" {
  // corelibs' synchronize() of DOMAIN also writes OTHER, which has an unsaved change: the flush must wait for
  // OTHER's lock as well.
  guard let saved = DefaultsStore(suiteName: arguments[2]), let other = DefaultsStore(suiteName: arguments[3]) else {
    exit(64)
  }
  let key = DefaultsKey<Int>("k", default: 0)
  other[key] = 1
  saved[key] = 1
  FileHandle.standardOutput.write(Data("written\n".utf8))
  saved.flush()
  FileHandle.standardOutput.write(Data("flushed\n".utf8))
  exit(0)
}
guard arguments.count == 5, let store = DefaultsStore(suiteName: arguments[2]), let value = Int(arguments[4]) else {
  FileHandle.standardError.write(
    Data("usage: rdefaults-test-helper flush|noflush|exit|write|fds DOMAIN KEY INT\n".utf8))
  exit(64)
}
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let key = DefaultsKey<Int>(arguments[3], default: 0)
store[key] = value
switch arguments[1] {
case "flush":
  store.flush()
  say("ready")
case "noflush":
  say("written")
case "fds":
  // Counts this process's descriptors before observing, while observing, and after the last token ends.
  func descriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1 }
  // One warm-up cycle first: Foundation and Dispatch open descriptors of their own lazily on first use.
  store.property(key).observe { _ in }.cancel()
  let before = descriptors()
  let tokens = (0..<3).map { _ in store.property(key).observe { _ in } }
  let during = descriptors()
  for token in tokens { token.cancel() }
  say("\(before) \(during) \(descriptors())")
  exit(0)
case "exit":
  // A normal exit right after the write, before the coalesced save: the save at exit must keep it.
  exit(0)
case "write":
  store.flush()
  say("\(DispatchTime.now().uptimeNanoseconds)")
  exit(0)
default:
  exit(64)
}
dispatchMain()
