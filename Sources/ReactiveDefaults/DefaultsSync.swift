import Dispatch
import Foundation

/// A sync of some of a store's keys with a remote, alive while you hold it (``cancel()`` or releasing it ends it),
/// made by ``DefaultsStore/sync(_:with:)``.
///
/// ```swift
/// let sync = store.sync(.theme, .volume, with: .folder(syncedFolder))
/// sync.add(.layout)                       // a key added later
/// let watch = sync.observeStatus { status in print(status) }
/// ```
///
/// Per key, the last write wins, by a hybrid logical clock: a write made after this device saw another device's
/// value wins over it even when this device's clock runs behind. A key this device never wrote is never pushed; a
/// fresh install takes the remote's values. Observers see a pulled value as an ordinary change of the key, once.
/// The article "Sync across devices" gives the whole contract.
public final class DefaultsSync: Sendable {
  /// Where the sync keeps its own state in the store (this device's name, its clock, and a record per key): a
  /// dictionary, shared by every process of the app that opens the suite.
  public static let stateKey = "ReactiveDefaults.sync"

  /// What the sync is doing.
  public enum Status: Sendable, Equatable {
    /// Nothing to do: every local write was pushed, every remote change pulled.
    case idle
    /// Pulling or pushing.
    case syncing
    /// The last run met a problem (also told to the store's ``DefaultsStore/issueHandler``); the next change tries
    /// again.
    case problem(DefaultsError)
  }

  let engine: SyncEngine

  init(engine: SyncEngine) {
    self.engine = engine
  }

  deinit {
    engine.stop()
  }

  /// Ends the sync: nothing more is pulled or pushed. Values already in the store stay.
  public func cancel() {
    engine.stop()
  }

  /// What the sync is doing now.
  public var status: Status { engine.status }

  /// Calls `handler` with the current status, then with each change of it (on the thread the change happened on),
  /// until the returned token ends.
  public func observeStatus(_ handler: @escaping @Sendable (Status) -> Void) -> DefaultsObservation {
    engine.observeStatus(handler)
  }

  /// Syncs more keys: their current values are kept as this device's own (not pushed until written), and the
  /// remote's entries for them are pulled.
  public func add<each Value: DefaultsValue>(_ keys: repeat DefaultsKey<each Value>) {
    var names: [String] = []
    var decoders: [String: @Sendable (PropertyListValue) -> Bool] = [:]
    for key in repeat each keys {
      names.append(key.name)
      decoders[key.name] = key.decodes
    }
    engine.add(names, decoders: decoders)
  }

  /// Pulls every key from the remote and pushes what it lacks, now; call it when the app comes to the foreground.
  public func synchronize() {
    engine.synchronizeRemote()
    engine.schedule(pull: [])
  }

  /// Returns once the sync has nothing left to do (every change asked for so far pulled or pushed), or after
  /// `timeout`: for tests, which then deliver ``MemoryCloud``'s uploads or look at the remote.
  ///
  /// - Parameter timeout: The longest wait.
  /// - Returns: false when the time ran out.
  public func waitUntilIdle(timeout: Duration) async -> Bool {
    let done = Locked<CheckedContinuation<Bool, Never>?>(nil)
    return await withCheckedContinuation { continuation in
      done.withLock { $0 = continuation }
      engine.whenIdle { done.withLock { $0.take() }?.resume(returning: true) }
      DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(timeout / .milliseconds(1)))) {
        done.withLock { $0.take() }?.resume(returning: false)
      }
    }
  }
}
