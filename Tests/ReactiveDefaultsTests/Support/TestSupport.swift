import Dispatch
import Foundation
import Synchronization

@testable import ReactiveDefaults

/// A fresh suite for one test: a unique name, so tests run in parallel without sharing state.
func makeSuiteName(_ function: String = #function) -> String {
  let label = function.prefix { $0.isLetter || $0.isNumber }
  return "ReactiveDefaultsTests.\(label).\(UUID().uuidString)"
}

/// A store over a fresh suite, with its issues recorded.
func makeStore(_ function: String = #function) -> (DefaultsStore, Recorder<DefaultsError>) {
  let store = DefaultsStore(suiteName: makeSuiteName(function))!
  let issues = Recorder<DefaultsError>()
  store.issueHandler = { issues.append($0) }
  return (store, issues)
}

/// The folder corelibs Foundation keeps plist domains in: `$XDG_CONFIG_HOME` when absolute, else `~/.config`.
var preferencesFolder: URL {
  if let xdg = ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
    return URL(fileURLWithPath: xdg)
  }
  return URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".config")
}

/// Deletes a suite's plist file (for tests that flushed to disk).
func removeSuiteFile(_ suiteName: String) {
  try? FileManager.default.removeItem(at: preferencesFolder.appendingPathComponent("\(suiteName).plist"))
}

/// Collects values from any thread and lets a test wait for a condition on them, bounded by a timeout.
final class Recorder<Element: Sendable>: Sendable {
  private struct Waiter {
    let id: Int
    let predicate: @Sendable ([Element]) -> Bool
    let continuation: CheckedContinuation<Bool, Never>
  }

  private struct State {
    var values: [Element] = []
    var waiters: [Waiter] = []
    var nextID = 0
  }

  private let state = Locked(State())

  init() {}

  var values: [Element] { state.withLock { $0.values } }
  var count: Int { state.withLock { $0.values.count } }
  var last: Element? { state.withLock { $0.values.last } }

  func append(_ value: Element) {
    let ready = state.withLock { state -> [Waiter] in
      state.values.append(value)
      let values = state.values
      let ready = state.waiters.filter { $0.predicate(values) }
      state.waiters.removeAll { waiter in ready.contains { $0.id == waiter.id } }
      return ready
    }
    for waiter in ready { waiter.continuation.resume(returning: true) }
  }

  /// Waits until `predicate` holds for the values seen so far; false if it did not within `timeout` seconds.
  func wait(timeout: Double = 30, until predicate: @escaping @Sendable ([Element]) -> Bool) async -> Bool {
    await withCheckedContinuation { continuation in
      let id = state.withLock { state -> Int? in
        if predicate(state.values) { return nil }
        state.nextID += 1
        state.waiters.append(Waiter(id: state.nextID, predicate: predicate, continuation: continuation))
        return state.nextID
      }
      guard let id else { return continuation.resume(returning: true) }
      DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [self] in
        let expired = state.withLock { state -> Waiter? in
          guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
          return state.waiters.remove(at: index)
        }
        expired?.continuation.resume(returning: false)
      }
    }
  }
}

/// A URL of a test fixture (Apple Foundation data kept in `Fixtures/`).
func fixtureURL(_ name: String) -> URL {
  Bundle.module.resourceURL!.appendingPathComponent("Fixtures").appendingPathComponent(name)
}

extension DefaultsKeys {
  static let volume = DefaultsKey<Double>("volume", default: 0.5)
  static let count = DefaultsKey<Int>("count", default: 0)
  static let name = DefaultsKey<String>("name", default: "")
  static let documentURL = DefaultsKey<URL?>("documentUrl")
  static let theme = DefaultsKey<Theme>("theme", default: .system)
  static let layout = DefaultsKey<Layout>("layout", default: .init())
  static let flag = DefaultsKey<Bool>("flag", default: false)
  static let nickname = DefaultsKey<String?>("nickname")
}

enum Theme: String, DefaultsValue, CaseIterable {
  case light, dark, system
}

struct Layout: DefaultsCodable, Equatable {
  var columns = 2
  var title = "main"
}

/// A Codable type that is not Equatable: de-duplication must work on its stored form.
struct Opaque: DefaultsCodable {
  var items: [String]
}
