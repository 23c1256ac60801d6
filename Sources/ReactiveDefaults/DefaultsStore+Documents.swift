public import Foundation

extension DefaultsStore {
  /// The document remembered under `key`, resolved: at its current URL, with a stale bookmark renewed and saved (the
  /// key's observers are not told: the document did not change, unless it moved, when they receive its new URL). A
  /// renewal is written only if the key still holds the reference it renews.
  ///
  /// ```swift
  /// if let document = store.document(.lastDocument) { title = document.url.lastPathComponent }
  /// ```
  ///
  /// - Parameter key: A key holding a remembered document.
  /// - Returns: The resolved reference; nil when nothing is stored, or when the document cannot be found (reported to
  ///   the ``issueHandler`` of every store over the suite as ``DefaultsError/documentUnavailable(key:url:reason:)``;
  ///   the stored reference is kept, and resolves again if the document comes back).
  public func document(_ key: DefaultsKey<DocumentReference?>) -> DocumentReference? {
    document(key, system: PlatformDocuments.system)
  }

  /// Resolves the document remembered under `key` (as ``document(_:)`` does) and runs `body` with access to it open,
  /// closing it however `body` ends.
  ///
  /// ```swift
  /// try store.withAccess(to: .lastDocument) { url in try editor.open(url) }
  /// ```
  ///
  /// - Parameters:
  ///   - key: A key holding a remembered document.
  ///   - body: What to do with the document's URL.
  /// - Returns: What `body` returned; nil when nothing is stored or the document cannot be found (reported to
  ///   ``issueHandler``), and `body` was not called.
  /// - Throws: What `body` threw.
  public func withAccess<Result, Failure: Error>(
    to key: DefaultsKey<DocumentReference?>, _ body: (URL) throws(Failure) -> Result
  ) throws(Failure) -> Result? {
    try withAccess(to: key, system: PlatformDocuments.system, body)
  }

  func withAccess<Result, Failure: Error>(
    to key: DefaultsKey<DocumentReference?>, system: any DocumentSystem, _ body: (URL) throws(Failure) -> Result
  ) throws(Failure) -> Result? {
    guard let document = document(key, system: system) else { return nil }
    return try DocumentResolution.withAccess(to: document.urlToOpen, system: system, body)
  }

  func document(_ key: DefaultsKey<DocumentReference?>, system: any DocumentSystem) -> DocumentReference? {
    self[key].flatMap { resolved($0, for: key, system: system) }
  }

  /// `reference`, read from `key`, resolved; a renewed bookmark is saved in its place unless the key changed meanwhile.
  /// Problems go to every store over the suite (the Rx property's store has no handler of its own).
  func resolved(
    _ reference: DocumentReference, for key: DefaultsKey<DocumentReference?>, system: any DocumentSystem
  ) -> DocumentReference? {
    switch DocumentResolution.resolve(reference, renewing: true, system: system) {
    case .unavailable(let reason):
      hub.announce(.documentUnavailable(key: key.name, url: reference.url.absoluteString, reason: reason))
      return nil
    case .resolved(let resolved, let renewed, let renewalFailure):
      if let renewalFailure {
        hub.announce(.documentNotRenewed(key: key.name, url: resolved.url.absoluteString, reason: renewalFailure))
      }
      if renewed { saveRenewal(resolved, of: reference, for: key) }
      return resolved
    }
  }

  /// Writes the renewed reference through a transaction that checks that the key still holds the reference it renews
  /// (same URL, same bookmark). Inside an edit of this suite on this thread (a resolution from an edit's body, or from
  /// a callback of a write), the renewal is left to the next resolution.
  private func saveRenewal(
    _ renewed: DocumentReference, of reference: DocumentReference, for key: DefaultsKey<DocumentReference?>
  ) {
    do {
      try edit { transaction in
        guard let current = transaction[key], current == reference, current.bookmark == reference.bookmark else {
          return
        }
        try transaction.set(renewed, for: key)
      }
    } catch DefaultsError.reentrantEdit {
      return
    } catch let error as DefaultsError {
      hub.announce(error)
    } catch {
      hub.announce(.documentNotRenewed(key: key.name, url: renewed.url.absoluteString, reason: "\(error)"))
    }
  }
}
