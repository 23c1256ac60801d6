import ChildProcess
import Dispatch
import Foundation
@_spi(Tools) import ReactiveDefaults
import Synchronization

/// `rdefaults demo`: a tour that needs no second terminal and finishes in a second or two.
enum Demo {
  static func run(_ arguments: [String]) throws {
    try Words(arguments, command: "demo").expect(0...0, "'demo' takes no arguments")
    let domain = "rdefaults-demo-\(ProcessInfo.processInfo.processIdentifier)"
    guard let store = DefaultsStore(suiteName: domain) else {
      throw RDefaults.Failure(message: "cannot open a scratch domain.", hint: nil, code: .failure)
    }
    defer {
      do { try store.removeSuite() } catch { RDefaults.printError("Warning: \(error)") }
      // A suite's lock file stays when the suite goes (a process waiting on it would otherwise share the lock with
      // one that made a new file); the scratch domain is this process's alone, named by its id, and the child that
      // wrote it has exited, so no process can hold or wait for this one.
      if let lock = store.fileURL.map({ $0.path + ".lock" }), FileManager.default.fileExists(atPath: lock) {
        do { try FileManager.default.removeItem(atPath: lock) } catch { RDefaults.printError("Warning: \(error)") }
      }
      say("\n5. Removed the scratch domain '\(domain)'. Try 'rdefaults watch DOMAIN' next.")
    }
    let volume = DefaultsKey<Double>("volume", default: 0.5)
    let mirror = DefaultsKey<Double>("mirror", default: 0)

    say("ReactiveDefaults demo, in the scratch domain '\(domain)'.\n")
    say("1. A typed key with a default: DefaultsKey<Double>(\"volume\", default: 0.5)")
    say("   store[.volume] reads \(store[volume]) while nothing is stored.\n")

    say("2. A property streams its current value, then each distinct change:")
    let crossProcess = DispatchSemaphore(value: 0)
    let token = store.property(volume).observe { value in
      say("   observer: volume = \(value)")
      if value == 0.42 { crossProcess.signal() }
    }
    say("   volume.value = 0.8")
    store[volume] = 0.8
    say("   volume.value = 0.8 again (no output: writing the stored value notifies nobody)")
    store[volume] = 0.8
    say("   volume.value = 0.3")
    store[volume] = 0.3

    say("\n3. Two properties bound together stay equal, both ways, without echo:")
    let link = store.property(volume).bind(to: store.property(mirror))
    say("   after bind: mirror = \(store[mirror])")
    say("   mirror.value = 0.6")
    store[mirror] = 0.6
    say("   volume is now \(store[volume])")
    link.cancel()
    // Save now: an unsaved local write of the same key would win over the child's when this process saves.
    store.flush()

    #if os(macOS) || os(Linux)
      say("\n4. Another process writes; the file watcher brings the change here, no polling:")
      say("   $ rdefaults write \(domain) volume -float 0.42")
      let started = DispatchTime.now()
      do {
        // Not Foundation's `Process`, whose `run()` on Linux can crash or fail with EBADF while other threads open and
        // close descriptors (see ChildProcess).
        let child = try ChildProcess(
          executable: executablePath(), arguments: ["write", domain, "volume", "-float", "0.42"],
          environment: ProcessInfo.processInfo.environment, error: { FileHandle.standardError.write($0) })
        _ = child.waitUntilExit()
      } catch {
        throw RDefaults.Failure(message: "cannot start a child rdefaults: \(error)", hint: nil, code: .failure)
      }
      let arrived = crossProcess.wait(timeout: .now() + 10) == .success
      let milliseconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e6
      if arrived {
        say("   arrived \(Int(milliseconds)) ms after the child started.")
      } else {
        say("   (the change did not arrive within 10 s: file watching may be unavailable here)")
      }
      token.cancel()
      guard arrived else {
        throw RDefaults.Failure(message: "the cross-process change did not arrive.", hint: nil, code: .failure)
      }
    #else
      token.cancel()
      say("\n4. (Skipped: this platform starts no child processes.)")
    #endif
  }

  private static func say(_ text: String) {
    RDefaults.printOut(text)
  }

  /// This executable, to start a child of the same program.
  private static func executablePath() -> String {
    // `/proc` is Linux's; elsewhere the bundle knows.
    #if os(Linux)
      if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return path }
    #endif
    return Bundle.main.executablePath ?? CommandLine.arguments[0]
  }
}
