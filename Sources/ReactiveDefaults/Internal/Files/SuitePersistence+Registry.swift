import Foundation
import Synchronization

/// One persistence per file in this process (``shared(_:make:)``), whatever the number of stores and hubs over it.
extension SuitePersistence {
  /// Which file a persistence is for: a suite's plist (memory is corelibs' copy) or a file store's file (memory of its
  /// own) at a path, exactly as spelled.
  enum Identity: Hashable {
    case suite(PropertyListKey)
    case fileStore(PropertyListKey)
  }

  private struct WeakPersistence {
    weak var persistence: SuitePersistence?
  }

  /// A file's entry in the registry: its persistence, or the one being built, with the threads waiting for it.
  private enum Entry {
    case live(WeakPersistence)
    case building(waiters: [DispatchSemaphore])
  }

  private static let instances = Locked<[Identity: Entry]>([:])

  /// The persistence of a file in this process: the live one, else one `make` builds, outside the registry's lock
  /// (building one opens the file, under its lock). One is built at a time for a file: a thread that asks meanwhile
  /// waits for it. (Two built at once would each open the file, and the open of the one then dropped would have
  /// corelibs drop its copy of the suite, which saves in place, without a journal, what the other's writes had left
  /// unsaved; a process killed in the middle would leave the file cut.)
  static func shared(_ identity: Identity, make: () -> SuitePersistence) -> SuitePersistence {
    enum Decision {
      case use(SuitePersistence)
      case wait(DispatchSemaphore)
      case build
    }
    while true {
      let decision = instances.withLock { instances -> Decision in
        switch instances[identity] {
        case .live(let entry)?:
          if let live = entry.persistence { return .use(live) }
        case .building(var waiters)?:
          let signal = DispatchSemaphore(value: 0)
          waiters.append(signal)
          instances[identity] = .building(waiters: waiters)
          return .wait(signal)
        case nil:
          break
        }
        instances[identity] = .building(waiters: [])
        return .build
      }
      switch decision {
      case .use(let persistence):
        return persistence
      case .wait(let signal):
        signal.wait()
      case .build:
        let made = make()
        let waiters = instances.withLock { instances -> [DispatchSemaphore] in
          // Few files are open in a process; dropping dead entries on each insertion keeps the table small.
          instances = instances.filter { _, entry in
            if case .live(let weak) = entry { return weak.persistence != nil }
            return true
          }
          let waiters: [DispatchSemaphore]
          if case .building(let waiting)? = instances[identity] { waiters = waiting } else { waiters = [] }
          instances[identity] = .live(WeakPersistence(persistence: made))
          return waiters
        }
        for waiter in waiters { waiter.signal() }
        return made
      }
    }
  }
}
