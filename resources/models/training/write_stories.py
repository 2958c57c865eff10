#!/usr/bin/env python3
"""Writes the short English stories the built-in `stories-en` decoder is trained on.

The text is this script's own output (no corpus is read, nothing needs a licence): stories for young readers, made
from a small grammar with a seeded random generator. Each story has a hero with a name and a pronoun, a friend, a
problem, a search over places and an ending, so a small model trained on it writes sentences a class can read, and
its heads have something to do: a name comes back (copying), a pronoun points to its noun, a quote opens and closes,
an adjective sits before its noun. Tokens are separated by spaces and punctuation stands alone (WikiText's
convention, the one the word-level tokenizer reads); a story is one line, so every story ends with `<eos>`.

Example:
  /usr/bin/python3 write_stories.py --stories 12000 --seed 1 --out /tmp/stories/train.txt
"""
import argparse
import os
import random
import re

NAMES = {
    "he": ["Tom", "Max", "Ben", "Sam", "Leo", "Jack", "Finn", "Oscar", "Hugo", "Theo", "Noah", "Eli"],
    "she": ["Lily", "Mia", "Anna", "Emma", "Rosa", "Lucy", "Nora", "Ella", "Ruby", "Zoe", "Ivy", "Maya"],
}
KINDS = ["rabbit", "fox", "bear", "mouse", "cat", "dog", "duck", "owl", "frog", "pig", "lion", "girl", "boy"]
KIND_GENDER = {"girl": "she", "boy": "he"}
SIZES = ["little", "small", "big", "young", "old", "tiny"]
MOODS = ["happy", "kind", "brave", "curious", "shy", "clever", "friendly", "gentle", "funny", "quiet"]
HOMES = ["a small house near the forest", "a big tree by the river", "a warm hole under a hill",
         "a little house in the village", "a cozy nest at the top of a tree", "a farm near the sea",
         "a blue house next to the park", "a quiet garden behind the school"]
COLOURS = ["red", "blue", "green", "yellow", "orange", "purple", "white", "pink", "brown"]
THINGS = ["ball", "kite", "hat", "book", "drum", "boat", "scarf", "box", "cup", "bell", "map", "key", "shell", "toy"]
PLAYS = {"ball": "play with", "kite": "fly", "hat": "wear", "book": "read", "drum": "play", "boat": "sail",
         "scarf": "wear", "box": "play with", "cup": "drink from", "bell": "ring", "map": "look at",
         "key": "look at", "shell": "look at", "toy": "play with"}
PLACES = ["the park", "the river", "the forest", "the beach", "the market", "the hill", "the lake", "the garden",
          "the farm", "the school", "the library", "the bakery", "the zoo", "the pond"]
FRIENDS = ["frog", "bird", "turtle", "squirrel", "goat", "hedgehog", "duck", "owl", "bee", "snail", "horse", "sheep"]
FOODS = ["apples", "bread", "carrots", "cookies", "soup", "berries", "cake", "cheese", "honey", "milk"]
HIDES = ["under a rock", "behind a tree", "in the tall grass", "under the bridge", "near the old well",
         "inside a hollow log", "on top of a hill", "beside the pond", "under a big leaf", "behind the fence"]
WEATHER = ["The sun was shining", "It was a windy day", "It was a cold morning", "The sky was grey",
           "It was a warm afternoon", "It had rained all night"]
# How a friend feels in each kind of trouble.
FEEL_LOST = ["sad", "worried", "upset", "unhappy"]
FEEL_STORM = ["scared", "afraid", "frightened"]
ENDINGS = ["From that day on , {a} and the {f} were best friends .",
           "That night , {a} went to bed with a big smile .",
           "{A} learned that helping a friend feels good .",
           "And every day after that , {a} and the {f} played together at {p} .",
           "{A} walked home , happy and tired .",
           "The end ."]


def cap(s):
    return s[0].upper() + s[1:]


class Hero:
    def __init__(self, rng):
        self.kind = rng.choice(KINDS)
        self.pron = KIND_GENDER.get(self.kind, rng.choice(["he", "she"]))
        self.name = rng.choice(NAMES[self.pron])
        self.obj = "him" if self.pron == "he" else "her"
        self.poss = "his" if self.pron == "he" else "her"


def opening(rng, h):
    size, mood = rng.choice(SIZES), rng.choice(MOODS)
    return rng.choice([
        f"Once upon a time , there was a {size} {h.kind} named {h.name} .",
        f"Once upon a time , there was a {mood} {h.kind} named {h.name} .",
        f"There once was a {size} {h.kind} called {h.name} .",
        f"{h.name} was a {mood} {size} {h.kind} .",
        f"In a quiet village , there lived a {size} {h.kind} named {h.name} .",
    ]) + " " + rng.choice([
        f"{h.name} lived in {rng.choice(HOMES)} .",
        f"{cap(h.pron)} lived in {rng.choice(HOMES)} with {h.poss} mother .",
        f"{cap(h.pron)} lived in {rng.choice(HOMES)} .",
    ])


def liking(rng, h, colour, thing):
    return rng.choice([
        f"{h.name} had a {colour} {thing} . Every day , {h.pron} liked to {PLAYS[thing]} the {colour} {thing} .",
        f"{cap(h.poss)} favourite thing was a {colour} {thing} .",
        f"{h.name} loved {h.poss} {colour} {thing} more than anything .",
        f"Every morning , {h.name} ate {rng.choice(FOODS)} and played with {h.poss} {colour} {thing} .",
    ])


def journey(rng, h, place):
    return f"{rng.choice(WEATHER)} . " + rng.choice([
        f"One day , {h.name} went to {place} .",
        f"One morning , {h.name} decided to walk to {place} .",
        f"One day , {h.name} and {h.poss} mother went to {place} .",
        f"After breakfast , {h.name} ran all the way to {place} .",
    ])


def problem(rng, h, friend, colour, thing, place):
    """The friend's trouble and how it is solved; returns the sentences."""
    kind = rng.randrange(4)
    feel = rng.choice(FEEL_STORM if kind == 3 else FEEL_LOST)
    if kind == 0:  # the friend lost something, they search
        lost_colour, lost = rng.choice(COLOURS), rng.choice(THINGS)
        spots = rng.sample(HIDES, 3)
        return [
            f"At {place} , {h.pron} saw a {friend} . The {friend} was {feel} .",
            f"\" Why are you {feel} ? \" asked {h.name} .",
            f"\" I lost my {lost_colour} {lost} , \" said the {friend} .",
            f"\" Do not be {feel} , \" said {h.name} . \" I will help you find it . \"",
            f"{h.name} and the {friend} looked {spots[0]} and {spots[1]} .",
            f"At last , they found the {lost_colour} {lost} {spots[2]} .",
            f"The {friend} was very happy . \" Thank you , {h.name} ! \" said the {friend} .",
        ]
    if kind == 1:  # the hero loses the favourite thing, the friend helps
        spot = rng.choice(HIDES)
        return [
            f"At {place} , {h.name} played with {h.poss} {colour} {thing} ." if PLAYS[thing] == "play with" else
            f"At {place} , {h.name} wanted to {PLAYS[thing]} {h.poss} {colour} {thing} .",
            f"But then the wind came , and the {colour} {thing} was gone !",
            f"{h.name} was {feel} . {cap(h.pron)} looked everywhere , but {h.pron} could not find it .",
            f"A {friend} saw {h.obj} and asked , \" What is wrong ? \"",
            f"\" I lost my {colour} {thing} , \" said {h.name} .",
            f"The {friend} said , \" I saw a {colour} {thing} {spot} . \"",
            f"They went together and found the {colour} {thing} {spot} .",
            f"{h.name} hugged the {friend} and said , \" Thank you ! \"",
        ]
    if kind == 2:  # a hungry friend, the hero shares
        food = rng.choice(FOODS)
        return [
            f"At {place} , {h.pron} met a {friend} . The {friend} looked hungry .",
            f"\" I have not eaten all day , \" said the {friend} .",
            f"{h.name} had some {food} in {h.poss} bag .",
            f"{cap(h.pron)} gave the {friend} half of the {food} .",
            f"The {friend} ate the {food} and smiled .",
            f"\" You are very kind , {h.name} , \" said the {friend} .",
        ]
    # a storm: the friend shelters with the hero
    spot = rng.choice(HIDES)
    return [
        f"At {place} , {h.name} met a {friend} , and they played a game .",
        f"Suddenly , dark clouds came and it began to rain .",
        f"The {friend} was {feel} of the storm .",
        f"\" Come with me , \" said {h.name} . \" We can wait {spot} . \"",
        f"They sat together {spot} until the rain stopped .",
        f"When the sun came out , the {friend} said , \" Thank you for staying with me . \"",
    ]


def story(rng):
    h = Hero(rng)
    colour, thing = rng.choice(COLOURS), rng.choice(THINGS)
    place, friend = rng.choice(PLACES), rng.choice([f for f in FRIENDS if f != h.kind])
    parts = [opening(rng, h)]
    if rng.random() < 0.8:
        parts.append(liking(rng, h, colour, thing))
    parts.append(journey(rng, h, place))
    parts += problem(rng, h, friend, colour, thing, place)
    names = {"a": h.name, "A": h.name, "f": friend, "p": place}
    parts.append(rng.choice(ENDINGS).format(**names))
    # "a" before a vowel is "an" ("an orange book", "an old mouse").
    return re.sub(r"\b([Aa]) (?=[aeiou])", r"\1n ", " ".join(parts))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stories", type=int, default=12000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as f:
        for _ in range(a.stories):
            f.write(story(rng) + "\n")


if __name__ == "__main__":
    main()
