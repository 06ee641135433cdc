"""Typed configuration: named presets, precedence preset < file < environment < overrides, a canonical hash
that names every result-relevant setting (and no paths or secrets), and errors that name the field.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lens._config import ConfigError, LensConfig, available_presets, load_config
from lens._errors import LensError


def test_fast_and_deep_presets_ship_with_the_package():
    assert {"fast", "deep"} <= set(available_presets())


def test_deep_preset_is_the_papers_deep_setting():
    c = load_config("deep", env={})
    assert c.preset == "deep"
    assert c.budget.max_tokens_per_query == 128_000
    assert c.budget.max_files == 10
    assert c.llm.call_timeout_s == 120
    assert c.budget.question_timeout_s == 300
    assert c.llm.local_model == "qwen2.5-coder-1.5b-instruct"


def test_fast_preset_uses_the_small_model():
    c = load_config("fast", env={})
    assert c.llm.local_model == "qwen2.5-coder-0.5b-instruct"
    assert c.budget.max_tokens_per_query < 128_000


def test_default_preset_is_deep_and_env_can_choose_another():
    assert load_config(env={}).preset == "deep"
    assert load_config(env={"LENS_PRESET": "fast"}).preset == "fast"
    assert load_config("deep", env={"LENS_PRESET": "fast"}).preset == "deep"  # an explicit name wins


def test_oracle_call_bound_is_c0_plus_c1_times_rounds():
    c = load_config("deep", env={})
    assert c.budget.max_oracle_calls == c.budget.c0 + c.budget.c1 * c.budget.max_rounds


def _file(tmp_path, text):
    p = tmp_path / "lens.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_file_overrides_the_preset(tmp_path):
    f = _file(tmp_path, "[budget]\nmax_files = 7\n")
    assert load_config("deep", file=f, env={}).budget.max_files == 7


def test_environment_overrides_the_file(tmp_path):
    f = _file(tmp_path, "[budget]\nmax_files = 7\nmax_rounds = 3\n")
    c = load_config("deep", file=f, env={"LENS_BUDGET__MAX_FILES": "5"})
    assert c.budget.max_files == 5
    assert c.budget.max_rounds == 3  # untouched keys of the file survive


def test_overrides_beat_the_environment(tmp_path):
    f = _file(tmp_path, "[budget]\nmax_files = 7\n")
    env = {"LENS_BUDGET__MAX_FILES": "5"}
    assert load_config("deep", file=f, env=env, overrides=["budget.max_files=3"]).budget.max_files == 3
    assert load_config("deep", file=f, env=env, overrides={"budget": {"max_files": 2}}).budget.max_files == 2


def test_config_file_can_come_from_the_environment(tmp_path):
    f = _file(tmp_path, '[llm]\nbase_url = "http://example.test/v1"\n')
    assert load_config(env={"LENS_CONFIG": str(f)}).llm.base_url == "http://example.test/v1"


def test_override_values_are_typed():
    c = load_config(
        env={},
        overrides=["llm.temperature=0.5", "llm.cache=false", "llm.base_url=http://h:8000/v1", "llm.model=null"],
    )
    assert c.llm.temperature == 0.5
    assert c.llm.cache is False
    assert c.llm.base_url == "http://h:8000/v1"
    assert c.llm.model is None


def test_nested_preset_sections_merge_instead_of_replacing():
    c = load_config("fast", env={}, overrides={"llm": {"temperature": 0.3}})
    assert c.llm.local_model == "qwen2.5-coder-0.5b-instruct"  # the rest of [llm] from the preset stays


def test_served_model_defaults_to_the_local_model():
    assert load_config("fast", env={}).llm.served_model == "qwen2.5-coder-0.5b-instruct"
    assert load_config("fast", env={}, overrides=["llm.model=gpt-x"]).llm.served_model == "gpt-x"


# --------------------------------------------------------------------------- hash


def test_canonical_hash_is_stable_across_loads():
    a = load_config("deep", env={})
    b = load_config("deep", env={})
    assert a.canonical_hash() == b.canonical_hash()
    assert len(a.canonical_hash()) == 64


def test_canonical_hash_does_not_depend_on_how_a_value_was_set(tmp_path):
    f = _file(tmp_path, "[budget]\nmax_files = 7\n")
    via_file = load_config("deep", file=f, env={})
    via_env = load_config("deep", env={"LENS_BUDGET__MAX_FILES": "7"})
    via_flag = load_config("deep", env={}, overrides=["budget.max_files=7"])
    assert via_file.canonical_hash() == via_env.canonical_hash() == via_flag.canonical_hash()


@pytest.mark.parametrize(
    "override",
    ["budget.max_files=9", "llm.temperature=0.2", "llm.model=other", "loop.delta=0.05", "prior.candidates=20"],
)
def test_canonical_hash_changes_with_a_result_relevant_setting(override):
    assert load_config(env={}).canonical_hash() != load_config(env={}, overrides=[override]).canonical_hash()


def test_presets_have_different_hashes():
    assert load_config("fast", env={}).canonical_hash() != load_config("deep", env={}).canonical_hash()


@pytest.mark.parametrize(
    "override",
    ["llm.cache_dir=/tmp/elsewhere", "memory.dir=/tmp/mem", "llm.n_threads=3", "reader.workers=4"],
)
def test_canonical_hash_excludes_locations_and_machine_settings(override):
    base = load_config(env={})
    other = load_config(env={}, overrides=[override])
    assert base != other
    assert base.canonical_hash() == other.canonical_hash()
    section, key = override.split("=")[0].split(".")
    assert key not in other.canonical()[section]


def test_canonical_form_is_plain_json_data():
    import json

    c = load_config("deep", env={})
    assert json.loads(json.dumps(c.canonical())) == c.canonical()


def test_api_keys_are_not_configuration():
    with pytest.raises(ConfigError, match="api_key"):
        load_config(env={}, overrides=["llm.api_key=sk-secret"])
    assert "api_key_env" in LensConfig.model_fields["llm"].annotation.model_fields


# --------------------------------------------------------------------------- errors


def test_invalid_value_names_the_field_and_source():
    with pytest.raises(ConfigError) as e:
        load_config(env={}, overrides=["budget.max_files=0"])
    assert "budget.max_files" in str(e.value)
    assert "overrides" in str(e.value)


def test_invalid_environment_value_names_the_field():
    with pytest.raises(ConfigError, match=r"llm\.call_timeout_s") as e:
        load_config(env={"LENS_LLM__CALL_TIMEOUT_S": "soon"})
    assert "environment" in str(e.value)


@pytest.mark.parametrize(
    "override, field",
    [
        ("llm.temperature=-7.5", "llm.temperature"),
        ("llm.temperature=2.5", "llm.temperature"),
        ("llm.max_output_tokens=1e12", "llm.max_output_tokens"),
        ("llm.call_timeout_s=Infinity", "llm.call_timeout_s"),
        ("llm.seed=-1", "llm.seed"),
        ("budget.max_tokens_per_query=1e12", "budget.max_tokens_per_query"),
        ("budget.question_timeout_s=1e9", "budget.question_timeout_s"),
        ("prior.title_weight=NaN", "prior.title_weight"),
        ("prior.lexical_weight=-1", "prior.lexical_weight"),
        ("loop.gamma.lookup=-2", "loop.gamma.lookup"),
        ("reader.max_file_bytes=1e15", "reader.max_file_bytes"),
    ],
)
def test_a_number_out_of_its_range_is_a_config_error_naming_the_field(override, field):
    with pytest.raises(ConfigError) as e:
        load_config(env={}, overrides=[override])
    assert f"{field}: " in str(e.value) and str(e.value).count("\n") == 0


def test_a_config_file_that_is_not_utf8_is_one_error_naming_the_file(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_bytes(b"[budget]\nmax_files = 3\n# caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8 text") as e:
        load_config(file=f, env={})
    assert str(f) in str(e.value)


def test_unknown_key_is_rejected_by_name(tmp_path):
    f = _file(tmp_path, "[budget]\nmax_filez = 3\n")
    with pytest.raises(ConfigError, match=r"budget\.max_filez") as e:
        load_config(file=f, env={})
    assert str(f) in str(e.value)


def test_malformed_toml_names_the_file(tmp_path):
    f = _file(tmp_path, "[budget\nmax_files = 3\n")
    with pytest.raises(ConfigError, match="not valid TOML") as e:
        load_config(file=f, env={})
    assert str(f) in str(e.value)


def test_missing_config_file_names_the_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file") as e:
        load_config(file=tmp_path / "nope.toml", env={})
    assert "nope.toml" in str(e.value)


def test_unknown_preset_lists_the_available_ones():
    with pytest.raises(ConfigError, match="unknown preset 'turbo'") as e:
        load_config("turbo", env={})
    assert "deep" in str(e.value) and "fast" in str(e.value)


def test_override_without_equals_sign_is_rejected():
    with pytest.raises(ConfigError, match="budget.max_files"):
        load_config(env={}, overrides=["budget.max_files"])


def test_config_error_is_a_lens_error():
    assert issubclass(ConfigError, LensError)


def test_a_preset_states_only_what_it_changes():
    """configs/<preset>.toml is a delta over the defaults: no value in it equals the default it overrides."""
    import tomllib

    from lens._config import MODELS_FILE, LensConfig

    defaults = LensConfig()
    presets = [p for p in (Path(__file__).resolve().parents[2] / "configs").glob("*.toml") if p.name != MODELS_FILE]
    assert {p.stem for p in presets} >= {"deep", "fast"}
    for path in presets:
        name, data = path.name, tomllib.loads(path.read_text(encoding="utf-8"))
        for section, values in data.items():
            for key, value in values.items():
                assert getattr(getattr(defaults, section), key) != value, f"{name}.toml: {section}.{key}"


def test_the_prior_and_memory_tuning_constants_are_described_settings():
    from lens._config import MemorySettings, PriorSettings

    tuning = {
        "bm25_k1",
        "bm25_b",
        "cue_term_weight",
        "partial_title_specificity",
        "name_word_specificity",
        "plain_word_specificity",
        "fuzzy_title_weight",
        "fuzzy_title_cutoff",
        "hop_weight",
        "layout_pool",
    }
    assert all(PriorSettings.model_fields[k].description for k in tuning)
    assert MemorySettings.model_fields["min_similarity"].description
    assert MemorySettings().min_similarity == 0.35 and PriorSettings().bm25_k1 == 0.9
