extension DefaultsStore {
  /// Syncs keys with a remote (iCloud, a synced folder), until the returned token ends.
  ///
  /// ```swift
  /// let sync = store.sync(.theme, .volume, with: .folder(URL(filePath: "/home/me/Sync/settings")))
  /// ```
  ///
  /// - Parameters:
  ///   - keys: The keys to sync, of any value types.
  ///   - remote: Where other devices read and write them.
  /// - Returns: The sync; it ends when released or cancelled.
  public func sync<each Value: DefaultsValue>(
    _ keys: repeat DefaultsKey<each Value>, with remote: some DefaultsRemote
  ) -> DefaultsSync {
    var names: [String] = []
    var decoders: [String: @Sendable (PropertyListValue) -> Bool] = [:]
    for key in repeat each keys {
      names.append(key.name)
      decoders[key.name] = key.decodes
    }
    let engine = SyncEngine(store: self, remote: remote, now: SyncClock.now)
    engine.add(names, decoders: decoders)
    return DefaultsSync(engine: engine)
  }

  /// Syncs keys by name, with a wall clock of the caller's in milliseconds since 1970 (the tests and the device
  /// checker skew it), local writes waiting `coalescing` for more before their run (the device checker, which waits
  /// for every sync to be idle after each step, runs them at once).
  @_spi(Tools) public func sync(
    _ names: [String], with remote: any DefaultsRemote, now: @escaping @Sendable () -> Int64,
    coalescing: Duration = .milliseconds(50)
  ) -> DefaultsSync {
    let engine = SyncEngine(store: self, remote: remote, now: now, coalescing: coalescing)
    engine.add(names)
    return DefaultsSync(engine: engine)
  }

  /// Syncs keys of one type, refusing pulled values that do not decode as it, with a wall clock of the caller's (the
  /// device checker's devices, whose hostile peers write values of other types).
  @_spi(Tools) public func sync<Value: DefaultsValue>(
    _ keys: [DefaultsKey<Value>], with remote: any DefaultsRemote, now: @escaping @Sendable () -> Int64,
    coalescing: Duration = .milliseconds(50)
  ) -> DefaultsSync {
    let engine = SyncEngine(store: self, remote: remote, now: now, coalescing: coalescing)
    engine.add(keys.map(\.name), decoders: Dictionary(keys.map { ($0.name, $0.decodes) }) { first, _ in first })
    return DefaultsSync(engine: engine)
  }
}

extension DefaultsKey {
  /// Whether a stored value decodes as the key's type (the sync refuses a pulled value that does not).
  var decodes: @Sendable (PropertyListValue) -> Bool {
    { Value(propertyListValue: $0) != nil }
  }
}
