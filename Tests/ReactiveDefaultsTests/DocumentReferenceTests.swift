import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

extension DefaultsKeys {
  fileprivate static let document = DefaultsKey<DocumentReference?>("document")
}

/// The decisions of remembered documents, through the in-memory seam (``MemoryDocuments``), on real suites.
@Suite struct DocumentReferenceTests {
  private let documents = MemoryDocuments()
  private let report = URL(fileURLWithPath: "/documents/report.txt")

  private func remembered(_ url: URL, in store: DefaultsStore) throws -> DocumentReference {
    let reference = try DocumentReference(url: documents.add(url), system: documents)
    store[.document] = reference
    return reference
  }

  @Test func aReferenceIsMadeWithAccessOpenAndStoredWithItsBookmark() throws {
    let (store, issues) = makeStore()
    let reference = try remembered(report, in: store)
    #expect(reference.bookmark != nil)
    #expect(documents.bookmarksMade == 1)
    #expect(documents.bookmarksMadeWithoutAccess == 0)
    #expect(documents.accesses == (1, 1))
    #expect(store[.document]?.bookmark == reference.bookmark)
    #expect(store.document(.document, system: documents)?.url == report)
    #expect(documents.bookmarksMade == 1, "a fresh bookmark is not made again")
    // Access opened on the URL the picker handed out, then on the one the resolution did: never on a rebuilt one.
    #expect(store.withAccess(to: .document, system: documents) { $0 } == MemoryDocuments.scoped(report))
    #expect(documents.accesses == (2, 2))
    #expect(documents.unscopedAccesses == 0)
    #expect(issues.values.isEmpty)
  }

  @Test func aStaleBookmarkIsRenewedAndSavedOnceWithoutTellingObservers() async throws {
    let (store, issues) = makeStore()
    let old = try remembered(report, in: store)
    let seen = Recorder<DocumentReference?>()
    let token = store.property(.document).observe { seen.append($0) }
    defer { token.cancel() }
    documents.makeStale(report)

    let resolved = try #require(store.document(.document, system: documents))
    #expect(resolved.url == report)
    #expect(resolved.bookmark != old.bookmark)
    #expect(documents.bookmarksMade == 2)
    #expect(documents.bookmarksMadeWithoutAccess == 0)
    #expect(store[.document]?.bookmark == resolved.bookmark, "the renewed bookmark is stored")
    // Renewed once: the new bookmark is not stale.
    _ = store.document(.document, system: documents)
    _ = store.withAccess(to: .document, system: documents) { _ in }
    #expect(documents.bookmarksMade == 2)
    #expect(documents.unscopedAccesses == 0, "the renewal and the access opened the resolution's URL")

    // The observers heard nothing of the renewal: the next change they hear is the next document.
    let other = URL(fileURLWithPath: "/documents/other.txt")
    store[.document] = try DocumentReference(url: documents.add(other), system: documents)
    #expect(await seen.wait { $0.last??.url == other })
    #expect(seen.values.map { $0?.url } == [report, other])
    #expect(issues.values.isEmpty)
  }

  @Test func aMovedDocumentIsFollowedAndItsNewPlaceStored() async throws {
    let (store, _) = makeStore()
    _ = try remembered(report, in: store)
    let seen = Recorder<DocumentReference?>()
    let token = store.property(.document).observe { seen.append($0) }
    defer { token.cancel() }
    let moved = URL(fileURLWithPath: "/archive/report.txt")
    documents.move(report, to: moved)
    #expect(store.document(.document, system: documents)?.url == moved)
    #expect(store[.document]?.url == moved)
    #expect(await seen.wait { $0.last??.url == moved }, "a move is a change: observers learn the new URL")
    // The body gets the URL the resolution handed out, with its scope open.
    #expect(store.withAccess(to: .document, system: documents) { $0 } == MemoryDocuments.scoped(moved))
    #expect(documents.unscopedAccesses == 0)
  }

  @Test func aDocumentThatIsGoneIsReportedAndReadsAsNilButStaysStored() throws {
    let (store, issues) = makeStore()
    let reference = try remembered(report, in: store)
    documents.remove(report)
    #expect(store.document(.document, system: documents) == nil)
    var called = false
    #expect(store.withAccess(to: .document, system: documents) { _ in called = true } == nil)
    #expect(!called)
    #expect(store[.document]?.bookmark == reference.bookmark, "the reference is kept: the volume may come back")
    let reported = issues.values
    #expect(reported.count == 2)
    for issue in reported {
      guard case .documentUnavailable(let key, let url, let reason) = issue else {
        Issue.record("unexpected \(issue)")
        continue
      }
      #expect(key == "document")
      #expect(url == report.absoluteString)
      #expect(reason.contains("the document is gone"))
    }
    #expect(throws: DefaultsError.self) { try reference.withAccess(system: documents) { _ in } }
    #expect(documents.accesses.opened == documents.accesses.closed)
  }

  @Test func accessIsClosedWhenTheBodyThrows() throws {
    struct Failure: Error {}
    let (store, _) = makeStore()
    let reference = try remembered(report, in: store)
    let before = documents.accesses.opened
    #expect(throws: Failure.self) { try store.withAccess(to: .document, system: documents) { _ in throw Failure() } }
    #expect(throws: Failure.self) { try reference.withAccess(system: documents) { _ in throw Failure() } }
    #expect(documents.accesses.opened == before + 2)
    #expect(documents.accesses.opened == documents.accesses.closed)
    #expect(documents.unscopedAccesses == 0)
    // A scope the system did not open is not closed either.
    documents.grantsAccess = false
    let opened = documents.accesses
    #expect(try reference.withAccess(system: documents) { $0 }.standardizedFileURL == report)
    #expect(documents.accesses == opened)
  }

  @Test func aRenewalThatFailsIsReportedAndTheOldBookmarkKept() throws {
    let (store, issues) = makeStore()
    let old = try remembered(report, in: store)
    documents.makeStale(report)
    documents.refusesBookmarks = true
    #expect(store.document(.document, system: documents)?.url == report, "a stale bookmark still opens")
    #expect(store[.document]?.bookmark == old.bookmark)
    guard case .documentNotRenewed(let key, _, let reason)? = issues.values.first else {
      Issue.record("no renewal problem reported: \(issues.values)")
      return
    }
    #expect(key == "document")
    #expect(reason.contains("refused"))
    documents.refusesBookmarks = false
    _ = store.document(.document, system: documents)
    #expect(store[.document]?.bookmark != old.bookmark, "the next resolution renews it")
  }

  @Test func aRenewalNeverOverwritesAWriteMadeMeanwhile() throws {
    let (store, _) = makeStore()
    _ = try remembered(report, in: store)
    documents.makeStale(report)
    let other = documents.add(URL(fileURLWithPath: "/documents/newer.txt"))
    let newer = try DocumentReference(url: other, system: documents)
    documents.whileMakingBookmark { store[.document] = newer }
    _ = store.document(.document, system: documents)
    documents.whileMakingBookmark(nil)
    #expect(store[.document]?.url == other.standardizedFileURL)
    #expect(store[.document]?.bookmark == newer.bookmark)
  }

  /// The same file picked again while a renewal runs (a new bookmark, an equal reference): the pick wins.
  @Test func aRenewalNeverOverwritesTheSameFilePickedAgainMeanwhile() throws {
    let (store, _) = makeStore()
    _ = try remembered(report, in: store)
    documents.makeStale(report)
    let picked = Recorder<DocumentReference>()
    let (documents, report) = (documents, report)
    documents.whileMakingBookmark {
      documents.whileMakingBookmark(nil)
      guard let again = try? DocumentReference(url: report, system: documents) else { return }
      picked.append(again)
      store[.document] = again
    }
    _ = store.document(.document, system: documents)
    let again = try #require(picked.values.first)
    #expect(store[.document]?.bookmark == again.bookmark)
  }

  /// A resolution from inside an edit of the suite cannot write its renewal there: it is left, quietly, to the next
  /// resolution.
  /// (The limit bounds a deadlock, scaled as every wait is: under the sanitizer other tests can hold the pool's
  /// threads for minutes before this one gets one.)
  @Test(.timeLimit(.minutes(5 * Int(timeoutScale)))) func aResolutionInsideAnEditLeavesTheRenewalToTheNextOne() throws {
    let (store, issues) = makeStore()
    let old = try remembered(report, in: store)
    documents.makeStale(report)
    try store.edit { _ in
      #expect(store.document(.document, system: documents)?.url == report)
    }
    #expect(store[.document]?.bookmark == old.bookmark)
    #expect(issues.values.isEmpty, "\(issues.values)")
    _ = store.document(.document, system: documents)
    #expect(store[.document]?.bookmark != old.bookmark)
  }

  /// Threads resolving one stale reference at once: one renewal is stored, and it is not stale.
  @Test func threadsResolvingAStaleReferenceAtOnceStoreOneRenewal() async throws {
    let (store, issues) = makeStore()
    let old = try remembered(report, in: store)
    documents.makeStale(report)
    let documents = documents
    await onThreadsOfTheirOwn(4) { _ in
      for _ in 0..<20 { _ = store.document(.document, system: documents) }
    }
    let stored = try #require(store[.document])
    #expect(stored.bookmark != old.bookmark)
    let made = documents.bookmarksMade
    _ = store.document(.document, system: documents)
    #expect(documents.bookmarksMade == made, "the stored renewal is not stale")
    #expect(documents.accesses.opened == documents.accesses.closed)
    #expect(issues.values.isEmpty)
  }

  @Test func aReferenceIsRefusedForWhatIsNoDocument() {
    #expect(throws: DefaultsError.self) {
      try DocumentReference(url: URL(string: "https://example.com/a.txt")!, system: documents)
    }
    #expect(throws: DefaultsError.self) { try DocumentReference(url: report, system: documents) }
    documents.add(report)
    documents.refusesBookmarks = true
    #expect(throws: DefaultsError.self) { try DocumentReference(url: report, system: documents) }
    #expect(documents.accesses.opened == documents.accesses.closed)
  }

  /// A key written as a URL (`rx.url(forKey:)`, `DefaultsKey<URL?>`) reads as a reference, which its first resolution
  /// gives a bookmark.
  @Test func aStoredURLReadsAsAReferenceAndGainsABookmark() throws {
    let (store, issues) = makeStore()
    store[DefaultsKey<URL?>("document")] = documents.add(report)
    #expect(store[.document] == DocumentReference(url: report, bookmark: nil))
    #expect(store[.document]?.bookmark == nil)
    #expect(store.document(.document, system: documents)?.url == report)
    #expect(store[.document]?.bookmark != nil)
    #expect(issues.values.isEmpty)
  }

  @Test func storedForms() throws {
    let reference = DocumentReference(url: report, bookmark: Data([1, 2]))
    #expect(
      try reference.propertyListValue()
        == .dictionary(["url": .string("file:///documents/report.txt"), "bookmark": .data(Data([1, 2]))]))
    let stored = try #require(try reference.propertyListValue())
    #expect(DocumentReference(propertyListValue: stored)?.bookmark == Data([1, 2]))
    #expect(DocumentReference(propertyListValue: .string("/documents/report.txt"))?.url == report)
    #expect(DocumentReference(propertyListValue: .string("file:///documents/a/../report.txt"))?.url == report)
    let refused: [PropertyListValue] = [
      .dictionary([:]), .dictionary(["url": .string("https://example.com")]),
      .dictionary(["url": .string("file:///a"), "bookmark": .string("x")]), .string("https://example.com"),
      .integer(1), .string("relative"),
    ]
    for value in refused { #expect(DocumentReference(propertyListValue: value) == nil, "\(value)") }
    let (store, issues) = makeStore()
    store.userDefaults.set("https://example.com", forKey: "document")
    #expect(store[.document] == nil)
    #expect(issues.values.count == 1)
  }
}
