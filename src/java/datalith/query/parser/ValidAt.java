package datalith.query.parser;

import java.util.Date;

// valid-at = ':valid-at' (instant | src-var instant)+ ;
// instant = ?var of :in | #inst literal | :any-valid-time
/**
 * A source read as the facts valid at an instant show it (valid time, issue #19): the query's
 * {@code :valid-at} section, for one source or several. The engine gives the clauses of
 * {@code src} the database {@code (valid-at db instant)} instead of the database bound to it, so
 * a query with {@code :valid-at} answers exactly as the same query on the valid-at view.
 *
 * @param src the source the instant applies to ({@code $} when the section names none)
 * @param instant a {@link Constant} holding a {@link Date} or {@code :any-valid-time} (the
 *     source read at any valid time: its patterns {@code [e a v from to]} match every version with
 *     its interval), or a {@link Variable} that an {@code :in} scalar binding binds (to either)
 */
public record ValidAt(SrcVar src, Term instant) {}
