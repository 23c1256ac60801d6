import Foundation
import Synchronization

/// Finds the one ``ChangeHub`` of a suite in this process, by suite name or by `UserDefaults` instance.
///
/// Hubs are held weakly: a hub lives while a store, property or observation uses it, and a later lookup
/// makes a new one.
enum HubRegistry {
  private enum Key: Hashable {
    case suite(String)
    case instance(ObjectIdentifier)
  }

  private struct WeakHub {
    weak var hub: ChangeHub?
  }

  private static let hubs = Locked<[Key: WeakHub]>([:])

  /// The hub of a named suite, made (with its `UserDefaults`) on first use; nil if Foundation refuses the name.
  static func hub(suiteName: String) -> ChangeHub? {
    hubs.withLock { hubs in
      sweep(&hubs)
      if let hub = hubs[.suite(suiteName)]?.hub { return hub }
      guard let defaults = UserDefaults(suiteName: suiteName) else { return nil }
      let hub = ChangeHub(defaults: defaults, suiteName: suiteName)
      hubs[.suite(suiteName)] = WeakHub(hub: hub)
      hubs[.instance(ObjectIdentifier(defaults))] = WeakHub(hub: hub)
      return hub
    }
  }

  /// The hub of an existing `UserDefaults` instance (the same hub as its suite's when the library made it).
  static func hub(for defaults: UserDefaults) -> ChangeHub {
    hubs.withLock { hubs in
      sweep(&hubs)
      if let hub = hubs[.instance(ObjectIdentifier(defaults))]?.hub { return hub }
      let hub = ChangeHub(defaults: defaults, suiteName: nil)
      hubs[.instance(ObjectIdentifier(defaults))] = WeakHub(hub: hub)
      return hub
    }
  }

  private static func sweep(_ hubs: inout [Key: WeakHub]) {
    // Few suites live in a process; dropping dead entries on each lookup keeps the table small.
    hubs = hubs.filter { $0.value.hub != nil }
  }
}
