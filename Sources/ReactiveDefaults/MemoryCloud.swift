import Foundation

/// A model of iCloud's key-value store for tests: one server of accounts, and connections to it
/// (``connect(account:downloaded:)``), each a ``DefaultsRemote`` with a local copy as a device's
/// `NSUbiquitousKeyValueStore` has. Nothing moves between a connection and the server until the test says so:
/// ``deliver(_:)`` uploads and downloads in the order it is given (delayed, reordered, duplicated), and the test makes
/// the initial download, an account change or a quota violation happen when it wants.
///
/// As the real store: a connection's writes go to its local copy at once; the server keeps the last upload of a key
/// to arrive; a download replaces a key's local value with the server's and tells the connection's observer
/// (`serverChange`, with the keys); writes made before a connection's initial download are discarded by it
/// (`initialSync`); an account change replaces the local copy with the new account's (`accountChange`).
public final class MemoryCloud: Sendable {
  /// One thing for ``deliver(_:)`` to move.
  public enum Delivery: Sendable, Equatable {
    /// The oldest upload of the connection reaches the server.
    case upload(Connection.ID)
    /// The connection downloads the server's value of every key another connection uploaded since its last
    /// download, and hears of it.
    case download(Connection.ID)
  }

  private struct Server: Sendable {
    var accounts: [String: [String: PropertyListValue]] = [:]
    var arrivals: [String: [(key: String, entry: PropertyListValue)]] = [:]
    var connections: [Connection.ID: Connection.State] = [:]
    var handlers: [Connection.ID: @Sendable (DefaultsRemoteChange) -> Void] = [:]
    var next = 0
    var deliversAtOnce = false
  }

  private let server = Locked(Server())
  /// What every connection accepts.
  public let limits: DefaultsRemoteLimits

  /// A model with no account yet, whose connections accept what `limits` allow (iCloud's by default).
  public init(limits: DefaultsRemoteLimits = .keyValueStore) {
    self.limits = limits
  }

  /// A new connection (a device) signed in to `account`; `downloaded` false: its initial download has not happened
  /// yet (``completeInitialDownload(_:)``).
  public func connect(account: String = "account", downloaded: Bool = true) -> Connection {
    server.withLock { server in
      server.next += 1
      let id = Connection.ID(rawValue: server.next)
      let local = downloaded ? server.accounts[account] ?? [:] : [:]
      server.connections[id] = Connection.State(account: account, local: local, downloaded: downloaded)
      return Connection(id: id, cloud: self)
    }
  }

  /// What is waiting to move: each connection's uploads, and a download for each connection with keys to fetch.
  public var pending: [Delivery] {
    server.withLock { server in
      server.connections.keys.sorted().flatMap { id -> [Delivery] in
        let state = server.connections[id]!
        return Array(repeating: .upload(id), count: state.uploads.count)
          + (state.toDownload.isEmpty ? [] : [.download(id)])
      }
    }
  }

  /// Moves one thing (nothing, when there is nothing of that kind waiting): an upload reaches the server and marks
  /// its key for download on every other connection of the account; a download replaces the connection's local
  /// values of the marked keys with the server's and tells its observer. A download delivered twice tells twice.
  public func deliver(_ delivery: Delivery) {
    let tell = server.withLock { server -> (@Sendable (DefaultsRemoteChange) -> Void, DefaultsRemoteChange)? in
      switch delivery {
      case .upload(let id):
        guard var state = server.connections[id], state.downloaded, !state.uploads.isEmpty else { return nil }
        let (key, value) = state.uploads.removeFirst()
        server.connections[id] = state
        server.accounts[state.account, default: [:]][key] = value
        server.arrivals[state.account, default: []].append((key, value))
        for (other, var otherState) in server.connections where other != id && otherState.account == state.account {
          otherState.toDownload.insert(key)
          server.connections[other] = otherState
        }
        return nil
      case .download(let id):
        guard var state = server.connections[id], state.downloaded else { return nil }
        let keys = state.toDownload.sorted()
        state.toDownload = []
        for key in keys { state.local[key] = server.accounts[state.account]?[key] }
        server.connections[id] = state
        guard let handler = server.handlers[id] else { return nil }
        return (handler, DefaultsRemoteChange(reason: .serverChange, keys: keys))
      }
    }
    if let (handler, change) = tell { handler(change) }
  }

  /// Delivers everything waiting, uploads first, until nothing is left.
  public func deliverAll() {
    while let next = pending.first(where: { if case .upload = $0 { true } else { false } }) ?? pending.first {
      deliver(next)
    }
  }

  /// The connection's initial download happens: its local copy becomes the account's, and it hears of every key of
  /// the account (`serverChange`). Until then its writes are discarded, each time with `initialSync`, as Apple's
  /// store does.
  public func completeInitialDownload(_ connection: Connection) {
    let keys = server.withLock { server in
      server.connections[connection.id].map { (server.accounts[$0.account] ?? [:]).keys.sorted() } ?? []
    }
    replaceLocal(connection, reason: .serverChange, keys: keys) { _ in }
  }

  /// Whether every store of a connection is delivered at once (uploaded, then downloaded by every other connection):
  /// for tests that wait for a value rather than order deliveries. False at first.
  public var deliversAtOnce: Bool {
    get { server.withLock { $0.deliversAtOnce } }
    set { server.withLock { $0.deliversAtOnce = newValue } }
  }

  /// The connection's user signs in to another account: its local copy becomes that account's, its waiting uploads
  /// are dropped, and it hears `accountChange`.
  public func switchAccount(_ connection: Connection, to account: String) {
    replaceLocal(connection, reason: .accountChange, keys: nil) { $0.account = account }
  }

  /// The server tells the connection that the app is over its quota.
  public func reportQuotaViolation(_ connection: Connection) {
    tell(connection.id, DefaultsRemoteChange(reason: .quotaViolation, keys: nil))
  }

  /// The server's entries of an account.
  public func entries(ofAccount account: String = "account") -> [String: PropertyListValue] {
    server.withLock { $0.accounts[account] ?? [:] }
  }

  /// Every upload that reached the server for an account, in the order they arrived.
  public func arrivals(ofAccount account: String = "account") -> [(key: String, entry: PropertyListValue)] {
    server.withLock { $0.arrivals[account] ?? [] }
  }

  /// The account a connection is signed in to.
  public func account(of connection: Connection) -> String {
    withState(connection.id) { $0.account }
  }

  private func replaceLocal(
    _ connection: Connection, reason: DefaultsRemoteChange.Reason, keys: [String]?,
    _ change: (inout Connection.State) -> Void
  ) {
    let handler = server.withLock { server -> (@Sendable (DefaultsRemoteChange) -> Void)? in
      guard var state = server.connections[connection.id] else { return nil }
      change(&state)
      state.local = server.accounts[state.account] ?? [:]
      (state.uploads, state.toDownload, state.downloaded) = ([], [], true)
      server.connections[connection.id] = state
      return server.handlers[connection.id]
    }
    handler?(DefaultsRemoteChange(reason: reason, keys: keys))
  }

  fileprivate func withState<T: Sendable>(_ id: Connection.ID, _ body: (inout Connection.State) -> T) -> T {
    server.withLock { server in
      var state = server.connections[id]!
      defer { server.connections[id] = state }
      return body(&state)
    }
  }

  fileprivate func tell(_ id: Connection.ID, _ change: DefaultsRemoteChange) {
    let handler = server.withLock { $0.handlers[id] }
    handler?(change)
  }

  fileprivate func setHandler(_ id: Connection.ID, _ handler: (@Sendable (DefaultsRemoteChange) -> Void)?) {
    server.withLock { $0.handlers[id] = handler }
  }

  /// One device's connection to the model: a ``DefaultsRemote``.
  public final class Connection: DefaultsRemote {
    /// A connection, in the order connections were made.
    public struct ID: Hashable, Comparable, Sendable {
      let rawValue: Int
      /// Older connections first.
      public static func < (left: ID, right: ID) -> Bool { left.rawValue < right.rawValue }
    }

    struct State: Sendable {
      var account: String
      var local: [String: PropertyListValue]
      var downloaded: Bool
      var uploads: [(String, PropertyListValue)] = []
      var toDownload: Set<String> = []
    }

    /// This connection, for ``MemoryCloud/deliver(_:)``.
    public let id: ID
    let cloud: MemoryCloud

    init(id: ID, cloud: MemoryCloud) {
      self.id = id
      self.cloud = cloud
    }

    /// The cloud's limits.
    public var limits: DefaultsRemoteLimits { cloud.limits }

    /// Tells `onChange` what reaches this connection until the token ends.
    public func start(device: String, onChange: @escaping @Sendable (DefaultsRemoteChange) -> Void)
      -> DefaultsObservation
    {
      cloud.setHandler(id, onChange)
      return DefaultsObservation { [id, cloud] in cloud.setHandler(id, nil) }
    }

    /// The connection's local copy.
    public func entries() -> [String: PropertyListValue] {
      cloud.withState(id) { $0.local }
    }

    /// Writes into the local copy at once and queues each entry for upload (``MemoryCloud/Delivery/upload(_:)``).
    public func store(_ entries: [String: PropertyListValue], from device: String) throws(DefaultsError) {
      let discarded = cloud.withState(id) { state -> Bool in
        guard state.downloaded else { return true }
        for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
          state.local[key] = value
          state.uploads.append((key, value))
        }
        return false
      }
      if discarded {
        cloud.tell(id, DefaultsRemoteChange(reason: .initialSync, keys: Array(entries.keys).sorted()))
      } else if cloud.deliversAtOnce {
        cloud.deliverAll()
      }
    }
  }
}
