"""core/confusables.py is Unicode's confusables table as `confusable_homoglyphs` packages it,
reduced to the letters the disguise rules fold: generated, and checked here against the package."""

from confusable_homoglyphs.utils import load

from mnemo_mcp.core import confusables, disguise


def _from_the_package() -> dict[str, str]:
    out = {}
    for ch, entries in load("confusables.json").items():
        if len(ch) != 1 or ch.isascii():
            continue
        for entry in entries:
            c = entry["c"]
            if len(c) == 1 and c.isascii() and c.isalnum():
                out[ch] = c
                break
    return out


def test_the_generated_table_is_the_packages_table_of_single_ascii_look_alikes():
    assert confusables.table() == _from_the_package()


def test_a_cyrillic_er_in_a_host_is_folded_to_latin():
    assert disguise._fold("rustuр") == "rustup"
